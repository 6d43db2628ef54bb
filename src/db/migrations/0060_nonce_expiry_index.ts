import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Expired sign-in nonces are deleted as new ones are issued: index the expiry. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX signin_nonces_expires_at ON signin_nonces (expires_at)`
})
