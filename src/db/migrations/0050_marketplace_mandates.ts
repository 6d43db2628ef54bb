import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Hiring mandates (docs/marketplace.md): one row per `hire/build`, keyed by the
 * delegation hash. Read back only by the signer who drafted it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE marketplace_mandates (
      mandate_id text PRIMARY KEY,
      signer_address text NOT NULL,
      account_id text NOT NULL REFERENCES accounts (id),
      account_address text NOT NULL,
      chain_id integer NOT NULL,
      agent_wallet text NOT NULL,
      delegatee_address text NOT NULL,
      per_job_budget double precision NOT NULL,
      per_job_budget_units numeric(78, 0) NOT NULL,
      deployment jsonb NOT NULL,
      evaluator text NOT NULL,
      delegation jsonb NOT NULL,
      enable_build_id text NOT NULL,
      enable_user_op_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX marketplace_mandates_signer ON marketplace_mandates (signer_address, created_at DESC)`
})
