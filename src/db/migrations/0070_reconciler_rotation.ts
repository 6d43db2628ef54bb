import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The reconciler visits submitted operations least-recently-visited first, so none is starved. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE user_operations ADD COLUMN reconciled_at timestamptz`
  yield* sql`CREATE INDEX user_operations_reconcile ON user_operations (chain_id, reconciled_at NULLS FIRST, submitted_at)
             WHERE status = 'submitted'`
})
