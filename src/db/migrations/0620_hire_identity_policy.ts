import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An owner's hire policy (issue 44 item 4, docs/marketplace.md "Hire only a named agent"): hire only
 * agents registered in the chain's ERC-8004 Identity Registry and, optionally, whose reputation from
 * the clients the owner names is at or above a floor. One row per signer; no row: any wallet.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE hire_identity_policies (
      signer_address text PRIMARY KEY,
      require_registered boolean NOT NULL,
      min_reputation numeric,
      reputation_clients jsonb NOT NULL DEFAULT '[]',
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (min_reputation IS NULL OR (require_registered AND jsonb_array_length(reputation_clients) > 0))
    )`
})
