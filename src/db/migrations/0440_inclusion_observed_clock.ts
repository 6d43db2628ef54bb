import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * `chain_inclusions.observed_at` is when the follower wrote the inclusion, not when its pass's
 * transaction began (`now()` is the transaction's start). The pass used to read the chain inside
 * its transaction, so `now()` came before the range was even read, and the follower's lag
 * (`bench/follower.ts`) looked shorter than it was; it now reads the chain first (docs/follower.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE chain_inclusions ALTER COLUMN observed_at SET DEFAULT clock_timestamp()`
})
