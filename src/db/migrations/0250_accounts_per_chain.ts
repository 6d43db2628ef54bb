import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Several chains (issue 29): a signer's account index is per chain. Account `n` exists once
 * on each served chain (same address where the factory allows), so the index is unique per
 * (signer, chain), not per signer. `(chain_id, address)` stays unique.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE accounts DROP CONSTRAINT accounts_signer_address_idx_key`
  yield* sql`ALTER TABLE accounts ADD CONSTRAINT accounts_signer_chain_idx_key UNIQUE (signer_address, chain_id, idx)`
})
