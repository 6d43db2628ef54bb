import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The panic key over HTTP and key changes (issue 27, docs/account.md). The chain checks the
 * panic delegation at each redemption but does not store it: this table keeps it (signed by a
 * device of the account) for the panic key's own sign-in, which sees nothing else.
 * `owner_key_changes` records each account handed to a new owner key (a replaced EOA, an
 * executed recovery), so the old key no longer reaches it and the new one does.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE owner_panic_keys (
      hash text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      chain_id integer NOT NULL,
      -- the trusted contact's or cold key's EOA (its sign-in), lowercase
      panic_key text NOT NULL,
      -- the panic key's own account on this chain: the delegation's delegate, the freeze's sender
      delegate text NOT NULL,
      label text NOT NULL,
      delegation jsonb NOT NULL,
      signature text,
      signed_at timestamptz,
      installed_at timestamptz,
      install_tx_hash text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX owner_panic_keys_key ON owner_panic_keys (panic_key, chain_id)`
  yield* sql`CREATE INDEX owner_panic_keys_account ON owner_panic_keys (account_id, created_at)`
  yield* sql`
    CREATE TABLE owner_key_changes (
      account_id text NOT NULL REFERENCES accounts (id),
      old_signer text NOT NULL,
      new_signer text NOT NULL,
      -- the transaction that changed the owner on chain (one change per transaction and account)
      tx_hash text NOT NULL,
      changed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, tx_hash)
    )`
})
