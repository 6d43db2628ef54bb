/**
 * The service's wire, as an agent reads it: the JSON shapes of the endpoints this client calls
 * (the service's contract: /openapi.json; docs in the service's README and docs/). Only what the
 * agent uses is typed; a response may carry more fields. The service's own test
 * (test/agentClient/wire.test.ts) checks these types against its Schemas, so they cannot drift.
 */
import type { Address, Hex } from "viem"

/** ISO 8601 instant. */
export type Timestamp = string

export interface TokenRef {
  readonly symbol: string
  readonly chainId: number
  readonly address?: Address
}

export interface TokenAmount {
  readonly token: TokenRef
  readonly amount: number
}

export interface Account {
  readonly id: string
  readonly label: string
  readonly address: Address
  readonly type: string
  readonly deploymentStatus: string
  readonly chainId: number
  readonly signerAddress: Address
  readonly frozen: boolean
}

export interface SignInNonce {
  readonly nonce: string
  readonly domain: string
  readonly uri: string
  readonly chainId: number
}

export interface Session {
  readonly token: string
  readonly signerAddress: Address
  readonly expiresAt: Timestamp
  readonly accounts: ReadonlyArray<Account>
}

export type DelegationStatus = "active" | "frozen" | "expired" | "revoked"

export interface Budget extends TokenAmount {
  readonly period?: { readonly every: "day" | "week" | "month" | "seconds"; readonly seconds: number; readonly start: Timestamp }
  readonly stream?: { readonly perSecond: number; readonly initial: number; readonly start: Timestamp }
}

export interface PolicySet {
  readonly budgets: ReadonlyArray<Budget>
  readonly perActionMax: TokenAmount
  readonly maxActions: number
  readonly recipientAllowlist: ReadonlyArray<{ readonly name: string; readonly address: Address; readonly chainId: number }>
  readonly allowedActions: ReadonlyArray<{ readonly name: string; readonly target: Address; readonly selectors: ReadonlyArray<Hex> }>
  readonly expiresAt: Timestamp
  readonly freezeGated: boolean
  readonly redeemers?: { readonly mode: "delegate" | "named" | "redelegation"; readonly addresses: ReadonlyArray<Address> }
}

/** One budget's state: `remaining` is what can still be spent (never above what the chain still allows, less open reservations). */
export interface SpentEntry {
  readonly token: TokenRef
  readonly limit: number
  readonly spent: number
  readonly remaining: number
  readonly expiresAt: Timestamp
  readonly reserved?: number
  readonly periodStart?: Timestamp
  readonly resetsAt?: Timestamp
  readonly unlocked?: number
}

/** A grant: an owner's delegation of bounded authority to a delegate (the agent). */
export interface Delegation {
  readonly id: string
  readonly permissionId: Hex
  readonly name: string
  readonly kind: string
  readonly delegateeAddress: Address
  readonly chain: string
  readonly chainId: number
  readonly status: DelegationStatus
  readonly humanSummary: string
  readonly policySet: PolicySet
  readonly spentToDate: ReadonlyArray<SpentEntry>
}

/** A user operation as built (`signature: "0x"`) or signed. Integers are decimal strings. */
export interface UserOperation {
  readonly sender: Address
  readonly nonce: string
  readonly factory?: Address
  readonly factoryData?: Hex
  readonly callData: Hex
  readonly callGasLimit: string
  readonly verificationGasLimit: string
  readonly preVerificationGas: string
  readonly maxFeePerGas: string
  readonly maxPriorityFeePerGas: string
  readonly paymaster?: Address
  readonly paymasterVerificationGasLimit?: string
  readonly paymasterPostOpGasLimit?: string
  readonly paymasterData?: Hex
  readonly signature: Hex
  readonly entryPoint: Address
  readonly chainId: number
}

/** EIP-712 typed data in its JSON form (`eth_signTypedData_v4`): integers as decimal strings. */
export interface TypedDataJson {
  readonly domain: { readonly name: string; readonly version: string; readonly chainId: number; readonly verifyingContract: Address }
  readonly types: { readonly [type: string]: ReadonlyArray<{ readonly name: string; readonly type: string }> }
  readonly primaryType: string
  readonly message: { readonly [field: string]: string }
}

/** An operation built by the service, to sign (`typedData`) and relay (`POST /userops`). */
export interface UserOpBuild {
  readonly intentType: string
  readonly userOp: UserOperation
  readonly userOpHash: Hex
  readonly humanSummary: string | null
  readonly buildId?: string
  readonly typedData?: TypedDataJson
  readonly expiresAt?: Timestamp
}

export type UserOpStatus = "submitted" | "included" | "failed"

export interface UserOpReceipt {
  readonly userOpId: string
  readonly userOpHash: Hex
  readonly intentType: string
  readonly chainId: number
  readonly sender: Address
  readonly status: UserOpStatus
  readonly outcome: "mined" | "reverted" | "rejected" | "pending"
  readonly transactionHash?: Hex
  readonly blockNumber?: string
  readonly reason?: string
  /** The audit entry of the operation (its inclusion proof: `GET /activity/{id}/proof`). */
  readonly auditEventId?: string
  readonly submittedAt: Timestamp
  readonly settledAt?: Timestamp
}

/** What an agent may ask its owner to change (at least one field); budgets are new totals. */
export interface GrantChanges {
  readonly budgets?: ReadonlyArray<{ readonly token: { readonly symbol: string }; readonly amount: number }>
  readonly perActionMax?: { readonly token: { readonly symbol: string }; readonly amount: number }
  readonly maxActions?: number
  readonly expiresAt?: Timestamp
  readonly addRecipients?: ReadonlyArray<{ readonly name: string; readonly address: Address; readonly chainId: number }>
}

export type GrantChangeStatus = "pending" | "accepting" | "accepted" | "declined" | "expired"

export interface GrantChangeRequest {
  readonly id: string
  readonly status: GrantChangeStatus
  readonly summary: string
  readonly delegationId: string
  readonly chainId: number
  readonly agent: Address
  readonly reason: string
  readonly changes: GrantChanges
  readonly diff: ReadonlyArray<{ readonly field: string; readonly from: string; readonly to: string; readonly text: string }>
  readonly deadline: Timestamp
  readonly createdAt: Timestamp
  /** The replacement grant, once the owner accepted. */
  readonly newDelegationId?: string
  readonly link: string
}

/** An ERC-7715 permission request (`@metamask/7715-permission-types`): amounts are hex base units, times whole seconds. */
export interface PermissionRequest {
  readonly chainId: Hex
  /** The owner's account asked. */
  readonly from?: Address | null
  /** The agent (its key, or one of its accounts on that chain). */
  readonly to: Address
  readonly permission: {
    readonly type: string
    readonly isAdjustmentAllowed: boolean
    readonly data: { readonly [field: string]: unknown }
  }
  readonly rules?: ReadonlyArray<{ readonly type: string; readonly data: { readonly [field: string]: unknown } }> | null
}

export type PermissionApprovalStatus = "pending" | "approving" | "granted" | "revoked" | "rejected" | "expired" | "failed"

/** An agent's ask as it stands: the owner's permission approval (`POST /permissions/asks`). */
export interface PermissionAsk {
  readonly id: string
  readonly kind: "grant" | "revoke"
  readonly status: PermissionApprovalStatus
  readonly createdAt: Timestamp
  readonly expiresAt: Timestamp
  readonly decidedAt?: Timestamp
  readonly failure?: string
  readonly requestedBy?: Address
  readonly grants?: ReadonlyArray<{
    /** The request as it would be granted (defaults filled in). */
    readonly request: PermissionRequest
    /** What the owner signs; its `humanSummary` is what the owner reads. */
    readonly build: { readonly humanSummary: string; readonly policySet: unknown }
    readonly adjustments?: ReadonlyArray<{ readonly field: string; readonly requested: string; readonly granted: string; readonly reason: string }>
    /** The new grant, once the owner signed. */
    readonly delegationId?: string
  }>
  /** Once granted: the standard responses, with the ERC-7710 permission `context`. */
  readonly permissions?: ReadonlyArray<{ readonly context: Hex; readonly delegationManager: Address; readonly from: Address; readonly to: Address }>
}

export type X402PaymentStatus = "authorized" | "settled" | "expired"

/** One x402 payment under a grant, as the service recorded it. */
export interface X402Payment {
  readonly id: string
  readonly paymentHash: Hex
  readonly delegationId: string
  readonly chainId: number
  readonly scheme: "exact" | "upto"
  readonly asset: Address
  readonly token?: string
  readonly payTo: Address
  /** Base units: `exact` the price, `upto` the ceiling signed. */
  readonly amount: string
  readonly facilitator: Address
  readonly resource?: { readonly url: string; readonly description?: string }
  readonly validBefore: Timestamp
  readonly status: X402PaymentStatus
  readonly settledUnits?: string
  readonly settledAmount?: number
  readonly txHash?: Hex
  readonly auditEventId?: string
  readonly createdAt: Timestamp
  readonly settledAt?: Timestamp
}

/** An audit entry's inclusion proof against the anchored Merkle root (verify it offline or on chain). */
export interface AuditProof {
  readonly event: { readonly id: string; readonly action: string; readonly status: string }
  readonly leafIndex: number
  readonly treeSize: number
  readonly auditPath: ReadonlyArray<Hex>
  readonly entriesRoot: Hex
  readonly anchor: {
    readonly merkleRoot: Hex
    readonly proof: ReadonlyArray<Hex>
    readonly txHash: Hex
    readonly blockNumber: string
    readonly chainId: number
    readonly anchoredAt: Timestamp
  }
}

/** The error envelope every failure carries. */
export interface ErrorEnvelope {
  readonly error: {
    readonly code: string
    readonly message: string
    /** Set on a policy decline (`out_of_scope`): why the grant does not allow it. */
    readonly declineReason?: string
    readonly details?: { readonly [key: string]: unknown }
  }
}
