/**
 * Approval requests (issue 25) on the wire: an action above its grant's approval threshold,
 * held until m of its n approvers sign it (docs/approvals.md). Shared by the delegations
 * feature (`POST /delegations/{id}/actions` answers 202 with one) and the approvals feature
 * (the approvers' inbox, the agent's lane).
 */
import { Schema } from "effect"
import { TokenRef } from "./Operations.ts"
import { Address, ChainId, DecimalString, Hash32, HexString, Timestamp } from "./Primitives.ts"

export const ApprovalStatus = Schema.Literals(["pending", "approved", "denied", "expired", "executed"]).annotate({
  identifier: "ApprovalStatus",
  description: "`pending` → `approved` (m approvals in) → `executed` (the chain spent them); or `denied` / `expired` (never executes)."
})
export type ApprovalStatus = typeof ApprovalStatus.Type

/** Request ids: `apr_` and a UUID. Any other shape is refused at decode (400), never looked up. */
export const ApprovalId = Schema.String.check(
  Schema.isPattern(/^apr_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, {
    description: "an approval request id: apr_ followed by a UUID"
  })
).annotate({ identifier: "ApprovalId" })

/**
 * What each approver signs (`eth_signTypedData_v4`): the ApprovalEnforcer's EIP-712 `Approval` of the
 * grant (its permission id), the exact execution, the nonce and the deadline (uint256s as decimal strings).
 */
export const ApprovalTypedData = Schema.Struct({
  domain: Schema.Struct({ name: Schema.String, version: Schema.String, chainId: ChainId, verifyingContract: Address }),
  types: Schema.Struct({ Approval: Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String })) }),
  primaryType: Schema.Literal("Approval"),
  message: Schema.Struct({
    delegationHash: Hash32,
    target: Address,
    value: DecimalString,
    callData: HexString,
    nonce: DecimalString,
    deadline: DecimalString
  })
}).annotate({ identifier: "ApprovalTypedData" })
export type ApprovalTypedData = typeof ApprovalTypedData.Type

export const ApprovalRequest = Schema.Struct({
  id: Schema.String,
  status: ApprovalStatus,
  /** The action in plain language. */
  summary: Schema.String,
  delegationId: Schema.String,
  /** The grant's delegation hash (what the approvals name). */
  permissionId: Hash32,
  chain: Schema.String,
  chainId: ChainId,
  /** The agent: the grant's delegate, whose action this is. */
  agent: Address,
  /** The account the money would leave. */
  account: Address,
  token: TokenRef,
  amount: Schema.Finite,
  /** The amount in base units, exact. */
  units: DecimalString,
  recipient: Address,
  recipientName: Schema.optionalKey(Schema.String),
  /** m of the rule (as the grant's caveat holds it). */
  required: Schema.Int,
  approvers: Schema.Array(Address),
  /** Approvals in so far (checked against the chain's rules when given). */
  approvals: Schema.Array(Schema.Struct({ approver: Address, at: Timestamp })),
  /** After it, the approvals are refused on chain (`ApprovalEnforcer:expired`) and the request is `expired`. */
  deadline: Timestamp,
  createdAt: Timestamp,
  approvedAt: Schema.optionalKey(Timestamp),
  /** Who denied it (an address) and why. */
  denial: Schema.optionalKey(Schema.Struct({ by: Address, reason: Schema.String, at: Timestamp })),
  /** Why it expired: its deadline passed, or its grant was revoked or replaced first. */
  expiry: Schema.optionalKey(Schema.Struct({ reason: Schema.Literals(["deadline", "grant_revoked"]), at: Timestamp })),
  /**
   * When it executed, as the chain showed it: the transaction and operation when it went through the relay; only
   * the time it was seen when the agent redeemed the approvals itself (the enforcer had spent their nonce).
   */
  execution: Schema.optionalKey(Schema.Struct({ txHash: Schema.optionalKey(Hash32), at: Timestamp, userOpId: Schema.optionalKey(Schema.String) })),
  /** Whether the completed build (with the approvals) was handed to the agent: from then on only revoking the grant stops it. */
  built: Schema.Boolean,
  /** The EIP-712 data each approver signs (the same for all). */
  toSign: ApprovalTypedData,
  /** The deep-link target of this request (notifications carry it). */
  link: Schema.String
}).annotate({ identifier: "ApprovalRequest" })
export type ApprovalRequest = typeof ApprovalRequest.Type

// --- Asking for more (issue 25, item 3) ---------------------------------------------------------

export const GrantChangeStatus = Schema.Literals(["pending", "accepting", "accepted", "declined", "expired"]).annotate({
  identifier: "GrantChangeStatus",
  description: "`pending` → `accepting` (the owner's replacement relayed) → `accepted` (the new grant enabled); or `declined` / `expired`."
})
export type GrantChangeStatus = typeof GrantChangeStatus.Type

/** Change request ids: `gcr_` and a UUID. */
export const GrantChangeId = Schema.String.check(
  Schema.isPattern(/^gcr_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, {
    description: "a grant change request id: gcr_ followed by a UUID"
  })
).annotate({ identifier: "GrantChangeId" })

const SymbolRef = Schema.Struct({ symbol: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(20)) })
const Positive = Schema.Finite.check(Schema.isGreaterThan(0))

/** What the agent asks to change (at least one field); budgets are the new totals of the grant's own tokens. */
export const GrantChanges = Schema.Struct({
  budgets: Schema.optionalKey(Schema.Array(Schema.Struct({ token: SymbolRef, amount: Positive })).check(Schema.isMinLength(1), Schema.isMaxLength(8))),
  perActionMax: Schema.optionalKey(Schema.Struct({ token: SymbolRef, amount: Positive })),
  maxActions: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(1_000_000))),
  expiresAt: Schema.optionalKey(Timestamp),
  /** Recipients to add to the grant's allowlist (a grant that pays anyone needs none). */
  addRecipients: Schema.optionalKey(
    Schema.Array(Schema.Struct({ name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(80)), address: Address, chainId: ChainId }))
      .check(Schema.isMinLength(1), Schema.isMaxLength(32))
  )
}).annotate({ identifier: "GrantChanges" })
export type GrantChanges = typeof GrantChanges.Type

export const GrantChangeRequest = Schema.Struct({
  id: Schema.String,
  status: GrantChangeStatus,
  /** The request in plain language. */
  summary: Schema.String,
  /** The grant it would replace. */
  delegationId: Schema.String,
  chain: Schema.String,
  chainId: ChainId,
  /** The agent (the grant's delegate) that asks. */
  agent: Address,
  reason: Schema.String,
  changes: GrantChanges,
  /** Old and new terms, one line each, in plain terms. */
  diff: Schema.Array(Schema.Struct({ field: Schema.String, from: Schema.String, to: Schema.String, text: Schema.String })),
  /** After it, the request can no longer be accepted (`expired`). */
  deadline: Timestamp,
  createdAt: Timestamp,
  /** The owner's decision. */
  decision: Schema.optionalKey(Schema.Struct({ by: Address, at: Timestamp, reason: Schema.optionalKey(Schema.String) })),
  /** The replacement grant, once enabled (the old one is revoked by the same operation). */
  newDelegationId: Schema.optionalKey(Schema.String),
  expiry: Schema.optionalKey(Schema.Struct({ reason: Schema.Literals(["deadline", "grant_revoked"]), at: Timestamp })),
  /** The deep-link target (notifications carry it). */
  link: Schema.String
}).annotate({ identifier: "GrantChangeRequest" })
export type GrantChangeRequest = typeof GrantChangeRequest.Type
