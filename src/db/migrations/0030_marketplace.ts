import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The managed (custodial) agent wallet each signer connected: only the address is kept. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE managed_wallets (
      signer_address text PRIMARY KEY,
      wallet_address text NOT NULL,
      connected_at timestamptz NOT NULL
    )`
})
