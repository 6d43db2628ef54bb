import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Several chains (issue 29): each chain's paymaster pays from its own deposit, at its own gas
 * prices, so sponsorship is counted per chain. Every count — per signer, per client address and
 * the paymaster's budget — is a row of `sponsor_totals` whose subject names the chain
 * (`<chainId>` for the budget, `<chainId>:<address>` for a signer or a client address).
 * The single-network counts of the period in progress at the upgrade are not carried over (their
 * chain is not recorded): on each chain that period starts from zero (docs/decisions.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM sponsor_totals`
  yield* sql`ALTER TABLE sponsor_totals DROP CONSTRAINT sponsor_totals_scope_check`
  yield* sql`ALTER TABLE sponsor_totals ADD CONSTRAINT sponsor_totals_scope_check CHECK (scope IN ('signer', 'address', 'budget'))`
  yield* sql`DROP TABLE sponsor_usage`
})
