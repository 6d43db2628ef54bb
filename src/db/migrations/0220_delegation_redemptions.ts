import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Every redemption of a grant as the chain shows it (issue 24, item 5; docs/follower.md): the
 * permission context's chain of delegations (leaf first), who redeemed it (`msg.sender` of
 * `redeemDelegations`), what moved, and the entries that record it on the owner's log and the
 * delegate's. Keyed like `chain_inclusions` (the root's `RedeemedDelegation` log): a block read
 * twice records nothing twice, and a redemption whose block left the chain reads as its inclusion
 * does (orphaned). `delegation_id` is null for a grant this service did not build.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE delegation_redemptions (
      chain_id integer NOT NULL,
      block_hash text NOT NULL,
      log_index integer NOT NULL,
      block_number bigint NOT NULL,
      tx_hash text NOT NULL,
      root_hash text NOT NULL,
      delegation_id text REFERENCES delegations (id),
      account_id text NOT NULL REFERENCES accounts (id),
      redeemer text NOT NULL,
      via text NOT NULL CHECK (via IN ('transaction', 'user_operation', 'account_execute', 'unknown')),
      user_op_hash text,
      chain jsonb NOT NULL,
      moved jsonb NOT NULL,
      owner_entry_id text,
      delegate_entry_id text,
      recorded_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (chain_id, block_hash, log_index)
    )`
  yield* sql`CREATE INDEX delegation_redemptions_delegation ON delegation_redemptions (delegation_id, block_number)`
  yield* sql`CREATE INDEX delegation_redemptions_account ON delegation_redemptions (account_id, block_number)`
})
