import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The mandate a grant was built from (issue 44 item 3, AP2 open Payment Mandates): its standard,
 * type and hash (sha-256 of its RFC 8785 canonical form), kept on the build and copied to the
 * grant when it is created; shown in the grant's reads (docs/ap2.md). Null for every other grant.
 * The mandate itself is not stored: it is the agent's, and its hash names it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE delegation_builds ADD COLUMN mandate jsonb`
  yield* sql`ALTER TABLE delegations ADD COLUMN mandate jsonb`
})
