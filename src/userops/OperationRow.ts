/**
 * The relay's stored operation (`user_operations`) and its receipt on the wire, and what
 * settles an operation: a receipt (from the bundler or the chain) or a bundler's refusal.
 */
import { Schema } from "effect"
import type { BundlerRejected, UserOpReceipt as BundlerReceipt } from "../chain/Bundler.ts"
import { BundlerRefusal, type IntentType, UserOperation, type UserOpReceipt } from "../domain/Operations.ts"

export const OperationRow = Schema.Struct({
  id: Schema.String,
  build_id: Schema.String,
  account_id: Schema.String,
  signer_address: Schema.String,
  intent_type: Schema.String,
  chain_id: Schema.Number,
  sender: Schema.String,
  nonce: Schema.String,
  user_op_hash: Schema.String,
  user_op: UserOperation,
  status: Schema.Literals(["submitted", "included", "failed"]),
  outcome: Schema.Literals(["pending", "mined", "reverted", "rejected"]),
  sent_at: Schema.NullOr(Schema.Date),
  send_attempts: Schema.Number,
  last_error: Schema.NullOr(Schema.String),
  transaction_hash: Schema.NullOr(Schema.String),
  block_number: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  revert_data: Schema.optionalKey(Schema.NullOr(Schema.String)),
  bundler_error: Schema.optionalKey(Schema.NullOr(BundlerRefusal)),
  decline_reason: Schema.NullOr(Schema.String),
  audit_event_id: Schema.NullOr(Schema.String),
  submitted_at: Schema.Date,
  settled_at: Schema.NullOr(Schema.Date)
})
export type OperationRow = typeof OperationRow.Type

export const toReceipt = (r: OperationRow): UserOpReceipt => ({
  userOpId: r.id,
  userOpHash: r.user_op_hash,
  intentType: r.intent_type as IntentType,
  chainId: r.chain_id,
  sender: r.sender,
  status: r.status,
  outcome: r.outcome,
  ...(r.transaction_hash !== null ? { transactionHash: r.transaction_hash } : {}),
  ...(r.block_number !== null ? { blockNumber: r.block_number } : {}),
  ...(r.reason !== null ? { reason: r.reason } : {}),
  ...(r.revert_data !== null && r.revert_data !== undefined ? { revertData: r.revert_data } : {}),
  ...(r.bundler_error !== null && r.bundler_error !== undefined ? { bundlerError: r.bundler_error } : {}),
  ...(r.audit_event_id !== null ? { auditEventId: r.audit_event_id } : {}),
  submittedAt: r.submitted_at.toISOString(),
  ...(r.settled_at !== null ? { settledAt: r.settled_at.toISOString() } : {})
})

/**
 * What settles an operation: the bundler's receipt (included), its refusal (rejected), or
 * the chain showing its sender's nonce used by another operation (it can never execute).
 */
export type Verdict =
  | { readonly _tag: "Receipt"; readonly receipt: BundlerReceipt }
  /** `note`: what the chain showed of a refusal that may have been stale (appended to the reason). */
  | { readonly _tag: "Rejected"; readonly error: BundlerRejected; readonly note?: string }
  | { readonly _tag: "NonceUsed"; readonly transactionHash: string | undefined }

/** Alto's answers for an operation it already holds: a re-send of ours, not a refusal. */
export const ALREADY_KNOWN = /already known|already present in mempool|already being processed/i

export const rejectionReason = (e: BundlerRejected) =>
  `${e.reason} (${e.code}): ${e.message}`.slice(0, 1000)

/** The refusal's fields as the receipt carries them (`message`: the bundler's own, before any note of ours). */
export const refusalOf = (e: BundlerRejected, message: string = e.message): BundlerRefusal => {
  const aa = /\bAA\d\d\b/.exec(message)?.[0]
  return {
    rpcCode: e.code,
    ...(aa === undefined ? {} : { aaCode: aa }),
    reason: e.reason,
    message: message.slice(0, 1000),
    ...(e.revertReason === undefined ? {} : { revertReason: e.revertReason.slice(0, 500) })
  }
}

/** The reason a superseded operation's receipt gives: the chain shows its nonce used by another operation. */
export const nonceUsedReason = (transactionHash: string | undefined) =>
  `nonce_used: its nonce was used by another operation${transactionHash === undefined ? "" : ` (transaction ${transactionHash})`}`
