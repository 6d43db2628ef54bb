import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The per-account hash-chained audit log, the notifications feed and the depeg
 * monitor's excursion state. See docs/audit-log.md.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // One row per account: the chain head. Appends lock it (FOR UPDATE), so appends on
  // one account are serialized and appends on different accounts never meet.
  yield* sql`
    CREATE TABLE audit_heads (
      account_id text PRIMARY KEY REFERENCES accounts (id),
      length integer NOT NULL,
      head_hash text NOT NULL,
      executed_count integer NOT NULL
    )`
  yield* sql`
    CREATE TABLE audit_entries (
      id text PRIMARY KEY,
      account_id text NOT NULL REFERENCES accounts (id),
      chain_index integer NOT NULL,
      operation_id text UNIQUE,
      decline_id text UNIQUE,
      occurred_at timestamptz NOT NULL,
      actor text NOT NULL,
      action text NOT NULL,
      amount double precision,
      token text,
      chain text NOT NULL,
      chain_id integer NOT NULL,
      status text NOT NULL,
      decline_reason text,
      provenance text NOT NULL,
      tx_hash text,
      audit_nonce integer,
      delegation_id text,
      prev_hash text NOT NULL,
      hash text NOT NULL,
      UNIQUE (account_id, chain_index),
      CHECK ((operation_id IS NULL) <> (decline_id IS NULL))
    )`
  yield* sql`CREATE INDEX audit_entries_delegation ON audit_entries (account_id, delegation_id, chain_index)`

  yield* sql`
    CREATE TABLE notifications (
      id text PRIMARY KEY,
      signer_address text NOT NULL,
      account_id text,
      tone text NOT NULL,
      title text NOT NULL,
      body text NOT NULL,
      created_at timestamptz NOT NULL,
      read_at timestamptz,
      related_type text,
      related_id text,
      action_label text,
      action_target text
    )`
  yield* sql`CREATE INDEX notifications_signer ON notifications (signer_address, created_at DESC, id DESC)`

  // One row per monitored stablecoin: whether it is currently outside its band. The
  // monitor flips it with a conditional UPDATE, so a transition fires once however many
  // processes poll, and survives restarts.
  yield* sql`
    CREATE TABLE depeg_state (
      token_id text PRIMARY KEY,
      symbol text NOT NULL,
      in_excursion boolean NOT NULL DEFAULT false,
      excursion_id text,
      last_price double precision,
      changed_at timestamptz
    )`
})
