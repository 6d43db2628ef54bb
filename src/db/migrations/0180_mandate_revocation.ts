import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Mandates are revocable grants (docs/marketplace.md, "Mandates as grants"): when and by which transaction. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE marketplace_mandates ADD COLUMN revoked_at timestamptz, ADD COLUMN revoke_tx_hash text`
  yield* sql`CREATE INDEX marketplace_mandates_account ON marketplace_mandates (account_id)`
})
