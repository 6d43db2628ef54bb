import { Schema } from "effect"
import { TokenAmount, TokenRef, UnsignedUserOp, Simulation } from "../domain/Operations.ts"
import { Address, ChainId, Hash32, Selector, Timestamp } from "../domain/Primitives.ts"

export const DelegationStatus = Schema.Literals(["active", "frozen", "expired", "revoked"]).annotate({
  identifier: "DelegationStatus"
})
export type DelegationStatus = typeof DelegationStatus.Type

export const RecipientEntry = Schema.Struct({ name: Schema.String, address: Address, chainId: ChainId })
export const AllowedAction = Schema.Struct({
  name: Schema.String,
  target: Address,
  selectors: Schema.Array(Selector)
})

export const PolicySet = Schema.Struct({
  budgets: Schema.Array(TokenAmount),
  perActionMax: TokenAmount,
  maxActions: Schema.Int,
  recipientAllowlist: Schema.Array(RecipientEntry),
  allowedActions: Schema.Array(AllowedAction),
  expiresAt: Timestamp,
  freezeGated: Schema.Boolean
}).annotate({ identifier: "PolicySet" })
export type PolicySet = typeof PolicySet.Type

export const SpentEntry = Schema.Struct({
  token: TokenRef,
  limit: Schema.Finite,
  spent: Schema.Finite,
  remaining: Schema.Finite,
  expiresAt: Timestamp
}).annotate({ identifier: "SpentEntry" })

export const Delegation = Schema.Struct({
  id: Schema.String,
  permissionId: Hash32,
  name: Schema.String,
  kind: Schema.String,
  icon: Schema.String,
  delegateeAddress: Address,
  chain: Schema.String,
  chainId: ChainId,
  status: DelegationStatus,
  humanSummary: Schema.String,
  policySet: PolicySet,
  spentToDate: Schema.Array(SpentEntry)
}).annotate({ identifier: "Delegation" })
export type Delegation = typeof Delegation.Type

export const PolicySnapshot = Schema.Struct({
  id: Schema.String,
  delegationId: Schema.String,
  permissionId: Hash32,
  policySet: PolicySet,
  humanSummary: Schema.String,
  capturedAt: Timestamp,
  enableTxHash: Hash32
}).annotate({ identifier: "PolicySnapshot" })

const PositiveAmount = Schema.Finite.check(Schema.isGreaterThan(0))

export const DelegationBuildRequest = Schema.Struct({
  name: Schema.String.check(Schema.isBetweenLength(1, 80)),
  kind: Schema.String.check(Schema.isBetweenLength(1, 40)),
  delegateeAddress: Address,
  chainId: ChainId,
  budgets: Schema.Array(Schema.Struct({ token: Schema.Struct({ symbol: Schema.String }), amount: PositiveAmount })).check(
    Schema.isMinLength(1)
  ),
  // Optional on input; the contract does not show them (defaults: docs/decisions.md).
  perActionMax: Schema.optionalKey(Schema.Struct({ token: Schema.Struct({ symbol: Schema.String }), amount: PositiveAmount })),
  maxActions: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
  recipientAllowlist: Schema.optionalKey(Schema.Array(RecipientEntry)),
  allowedActions: Schema.optionalKey(Schema.Array(AllowedAction)),
  expiresAt: Schema.optionalKey(Timestamp),
  accountId: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "DelegationBuildRequest" })

export const DelegationBuild = Schema.Struct({
  policySet: PolicySet,
  humanSummary: Schema.String,
  enableUserOp: UnsignedUserOp,
  userOpHash: Hash32,
  simulation: Simulation
}).annotate({ identifier: "DelegationBuild" })
