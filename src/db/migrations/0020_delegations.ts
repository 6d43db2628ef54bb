import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Delegations: enable builds, delegations and their per-token legs, immutable policy
 * snapshots, spend reservations (the race-free accounting: docs/delegations.md), and
 * the stand-in decline log (until the audit log takes declines).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE delegation_builds (
      id text PRIMARY KEY,
      op_build_id text NOT NULL,
      signer_address text NOT NULL,
      account_id text NOT NULL REFERENCES accounts (id),
      name text NOT NULL,
      kind text NOT NULL,
      delegatee_address text NOT NULL,
      chain_id integer NOT NULL,
      policy_set jsonb NOT NULL,
      human_summary text NOT NULL,
      legs jsonb NOT NULL,
      user_op_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE delegations (
      id text PRIMARY KEY,
      build_id text NOT NULL UNIQUE REFERENCES delegation_builds (id),
      signer_address text NOT NULL,
      account_id text NOT NULL REFERENCES accounts (id),
      delegator_address text NOT NULL,
      permission_id text NOT NULL UNIQUE,
      name text NOT NULL,
      kind text NOT NULL,
      icon text NOT NULL,
      delegatee_address text NOT NULL,
      chain_id integer NOT NULL,
      policy_set jsonb NOT NULL,
      human_summary text NOT NULL,
      legs jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'active', 'failed', 'revoked')),
      enable_user_op_hash text NOT NULL UNIQUE,
      enable_tx_hash text,
      failure_reason text,
      revoke_tx_hash text,
      created_at timestamptz NOT NULL,
      activated_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX delegations_account ON delegations (account_id, created_at)`
  yield* sql`
    CREATE TABLE delegation_legs (
      permission_id text PRIMARY KEY,
      delegation_id text NOT NULL REFERENCES delegations (id),
      delegator_address text NOT NULL,
      token_address text NOT NULL,
      disabled_at timestamptz,
      disable_tx_hash text
    )`
  yield* sql`CREATE INDEX delegation_legs_delegation ON delegation_legs (delegation_id)`
  yield* sql`
    CREATE TABLE policy_snapshots (
      id text PRIMARY KEY,
      delegation_id text NOT NULL REFERENCES delegations (id),
      permission_id text NOT NULL,
      policy_set jsonb NOT NULL,
      human_summary text NOT NULL,
      captured_at timestamptz NOT NULL,
      enable_tx_hash text NOT NULL
    )`
  yield* sql`CREATE INDEX policy_snapshots_delegation ON policy_snapshots (delegation_id, captured_at)`
  yield* sql`
    CREATE FUNCTION policy_snapshots_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'policy snapshots are immutable';
    END
    $$`
  yield* sql`
    CREATE TRIGGER policy_snapshots_immutable BEFORE UPDATE OR DELETE ON policy_snapshots
    FOR EACH ROW EXECUTE FUNCTION policy_snapshots_immutable()`
  yield* sql`
    CREATE TABLE delegation_reservations (
      id text PRIMARY KEY,
      delegation_id text NOT NULL REFERENCES delegations (id),
      token_address text NOT NULL,
      units numeric(78, 0) NOT NULL CHECK (units > 0),
      recipient text NOT NULL,
      status text NOT NULL CHECK (status IN ('reserved', 'submitted', 'final', 'released')),
      -- Not unique: identical action builds (same nonce, amount, recipient) hash alike; each holds its own reservation.
      user_op_hash text,
      op_build_id text,
      expires_at timestamptz NOT NULL,
      tx_hash text,
      created_at timestamptz NOT NULL,
      settled_at timestamptz
    )`
  yield* sql`CREATE INDEX delegation_reservations_live ON delegation_reservations (delegation_id) WHERE status <> 'released'`
  yield* sql`CREATE INDEX delegation_reservations_op ON delegation_reservations (user_op_hash)`
  yield* sql`
    CREATE TABLE delegation_declines (
      id text PRIMARY KEY,
      signer_address text NOT NULL,
      account_id text NOT NULL,
      delegation_id text NOT NULL,
      chain_id integer NOT NULL,
      reason text NOT NULL,
      message text NOT NULL,
      amount double precision,
      token text,
      recipient text,
      created_at timestamptz NOT NULL
    )`
})
