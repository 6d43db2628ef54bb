import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Operation builds (stored before a build is answered) and relayed user operations
 * (stored before anything is forwarded to the bundler). See docs/relay.md.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE op_builds (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      signer_address text NOT NULL,
      intent_type text NOT NULL,
      chain_id integer NOT NULL,
      entry_point text NOT NULL,
      sender text NOT NULL,
      nonce text NOT NULL,
      call_data text NOT NULL,
      user_op jsonb NOT NULL,
      user_op_hash text NOT NULL,
      risk_reducing boolean NOT NULL,
      sponsored boolean NOT NULL,
      human_summary text,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX op_builds_match ON op_builds (chain_id, sender, nonce)`
  yield* sql`
    CREATE TABLE user_operations (
      id text PRIMARY KEY,
      build_id text NOT NULL REFERENCES op_builds (id),
      account_id text NOT NULL REFERENCES accounts (id),
      signer_address text NOT NULL,
      intent_type text NOT NULL,
      chain_id integer NOT NULL,
      sender text NOT NULL,
      nonce text NOT NULL,
      user_op_hash text NOT NULL,
      user_op jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('submitted', 'included', 'failed')),
      outcome text NOT NULL CHECK (outcome IN ('pending', 'mined', 'reverted', 'rejected')),
      sent_at timestamptz,
      send_attempts integer NOT NULL DEFAULT 0,
      -- Whoever holds an unexpired lease is forwarding the operation; others leave it alone.
      send_lease_until timestamptz,
      last_error text,
      transaction_hash text,
      block_number text,
      reason text,
      decline_reason text,
      audit_event_id text,
      submitted_at timestamptz NOT NULL,
      settled_at timestamptz,
      UNIQUE (chain_id, user_op_hash)
    )`
  yield* sql`CREATE INDEX user_operations_unsettled ON user_operations (submitted_at) WHERE status = 'submitted'`
  yield* sql`CREATE INDEX user_operations_signer ON user_operations (signer_address)`
})
