import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** On-chain anchors of the audit chain heads (docs/audit-log.md, "Anchoring"). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE audit_anchors (
      id text PRIMARY KEY,
      chain_id integer NOT NULL,
      merkle_root text NOT NULL,
      tx_hash text NOT NULL,
      block_number bigint NOT NULL,
      head_count integer NOT NULL,
      anchored_at timestamptz NOT NULL
    )`
  // Which head of each account an anchor committed (the Merkle leaves).
  yield* sql`
    CREATE TABLE audit_anchor_heads (
      anchor_id text NOT NULL REFERENCES audit_anchors (id),
      account_id text NOT NULL REFERENCES accounts (id),
      length integer NOT NULL,
      head_hash text NOT NULL,
      PRIMARY KEY (anchor_id, account_id)
    )`
  // The latest anchored head per account.
  yield* sql`
    CREATE TABLE audit_anchor_state (
      account_id text PRIMARY KEY REFERENCES accounts (id),
      anchor_id text NOT NULL REFERENCES audit_anchors (id),
      length integer NOT NULL,
      head_hash text NOT NULL
    )`
})
