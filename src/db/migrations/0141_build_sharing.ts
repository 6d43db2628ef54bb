import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Builds are unique (docs/relay.md "Builds"): an identical request while its build is open
 * answers that build (and its reservation) again, so a build keeps its answer and the key
 * of what may share it. A reservation is found by its build, to free the ones whose
 * (sender, nonce) another operation used.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE op_builds ADD COLUMN answer jsonb`
  yield* sql`ALTER TABLE op_builds ADD COLUMN share_key text`
  yield* sql`CREATE INDEX op_builds_share ON op_builds (share_key, created_at DESC) WHERE answer IS NOT NULL`
  yield* sql`CREATE INDEX delegation_reservations_build ON delegation_reservations (op_build_id) WHERE status = 'reserved'`
})
