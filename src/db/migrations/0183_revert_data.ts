import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The raw revert data of a reverted operation, beside its reason in words (src/chain/RevertReasons.ts). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE user_operations ADD COLUMN revert_data text`
})
