/**
 * A stored audit entry as read from `audit_entries`: the columns in the form `Chain.ts`
 * hashes, their Schema, and the entry they make (`AuditChain` reads and writes these;
 * the activity and proof endpoints read them too).
 */
import { Schema } from "effect"
import type { StoredEntry } from "./Chain.ts"

/** Columns in the form `Chain.ts` hashes (the timestamp as PostgreSQL stores it, to the microsecond). */
export const entryColumns = `id, account_id, chain_index, operation_id, decline_id,
  to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
  actor, action, amount, token, chain, chain_id, status, decline_reason, provenance, tx_hash,
  audit_nonce, delegation_id, recipient, prev_hash, hash`

export const EntryRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  chain_index: Schema.Number,
  operation_id: Schema.NullOr(Schema.String),
  decline_id: Schema.NullOr(Schema.String),
  occurred_at: Schema.String,
  actor: Schema.String,
  action: Schema.String,
  amount: Schema.NullOr(Schema.Number),
  token: Schema.NullOr(Schema.String),
  chain: Schema.String,
  chain_id: Schema.Number,
  status: Schema.String,
  decline_reason: Schema.NullOr(Schema.String),
  provenance: Schema.String,
  tx_hash: Schema.NullOr(Schema.String),
  audit_nonce: Schema.NullOr(Schema.Number),
  delegation_id: Schema.NullOr(Schema.String),
  recipient: Schema.NullOr(Schema.String),
  prev_hash: Schema.String,
  hash: Schema.String
})
export type EntryRow = typeof EntryRow.Type

export const fromRow = (r: EntryRow): StoredEntry => ({
  id: r.id,
  accountId: r.account_id,
  index: r.chain_index,
  operationId: r.operation_id,
  declineId: r.decline_id,
  timestamp: r.occurred_at,
  actor: r.actor,
  action: r.action,
  amount: r.amount,
  token: r.token,
  chain: r.chain,
  chainId: r.chain_id,
  status: r.status,
  declineReason: r.decline_reason,
  provenance: r.provenance,
  txHash: r.tx_hash,
  auditNonce: r.audit_nonce,
  delegationId: r.delegation_id,
  recipient: r.recipient,
  prevHash: r.prev_hash,
  hash: r.hash
})
