import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The owner's own account (issue 27, docs/account.md). The chain holds the devices, guardians,
 * threshold, delay, safe address and whether a delegation is disabled; these tables hold only
 * what the chain cannot: the names people give (device and guardian labels) and the signed
 * delegation the account gave the Recovery contract (the chain checks a delegation when it is
 * redeemed, it does not store it; executing a recovery needs it).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE owner_device_labels (
      account_id text NOT NULL REFERENCES accounts (id),
      -- a passkey's key id hash (what the account stores), or an EOA address; lowercase
      device text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('passkey', 'eoa')),
      label text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, device)
    )`
  yield* sql`
    CREATE TABLE owner_recovery_delegations (
      hash text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      chain_id integer NOT NULL,
      -- unsigned; the signature apart (signed again when a device that signed it goes)
      delegation jsonb NOT NULL,
      signature text,
      signed_at timestamptz,
      installed_at timestamptz,
      install_tx_hash text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX owner_recovery_delegations_account ON owner_recovery_delegations (account_id, created_at)`
  yield* sql`
    CREATE TABLE owner_guardian_labels (
      account_id text NOT NULL REFERENCES accounts (id),
      guardian text NOT NULL,
      label text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, guardian)
    )`
})
