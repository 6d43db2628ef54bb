import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The relay takes exactly what was built and signed (docs/relay.md "Matching"):
 * - builds are found by their userOpHash (every signed field), indexed, not by a
 *   (sender, nonce) list another user's builds could crowd;
 * - a stored submission is keyed by the whole signed operation, its signature included:
 *   a rejected copy with a bad signature never answers for the correctly signed one,
 *   and at most one submission per userOpHash is live (not failed) at a time;
 * - a reservation remembers the one submission bound to it: only that one's failure frees it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX op_builds_hash ON op_builds (chain_id, user_op_hash)`
  // keccak256 of the signature, written by the relay; earlier rows (one per hash already) get a distinct stand-in.
  yield* sql`ALTER TABLE user_operations ADD COLUMN signature_digest text`
  yield* sql`UPDATE user_operations SET signature_digest = 'legacy:' || id`
  yield* sql`ALTER TABLE user_operations ALTER COLUMN signature_digest SET NOT NULL`
  yield* sql`ALTER TABLE user_operations DROP CONSTRAINT user_operations_chain_id_user_op_hash_key`
  yield* sql`CREATE UNIQUE INDEX user_operations_signed ON user_operations (chain_id, user_op_hash, signature_digest)`
  yield* sql`CREATE UNIQUE INDEX user_operations_live ON user_operations (chain_id, user_op_hash) WHERE status <> 'failed'`
  yield* sql`ALTER TABLE delegation_reservations ADD COLUMN operation_id text`
})
