/**
 * Hiring's wire shapes: the hire (a mandate and its enable operation), the job builds under a
 * mandate, the managed deposit, and a mandate as a grant. docs/marketplace.md ("Hiring").
 */
import { Schema } from "effect"
import { Account } from "../accounts/Domain.ts"
import { DelegationTypedData, DfDelegation } from "../delegations/Domain.ts"
import { Simulation, UnsignedUserOp, userOpBuildExtraFields, userOpBuildFields } from "../domain/Operations.ts"
import { Address, Hash32, Timestamp } from "../domain/Primitives.ts"

/** `POST /marketplace/agents/hire/build`: the mandate and its unsigned enable operation. */
export const HireBuild = Schema.Struct({
  mandateId: Hash32,
  account: Account,
  policySummary: Schema.String,
  enableUserOp: UnsignedUserOp,
  userOpHash: Hash32,
  simulation: Simulation,
  /** Beyond the contract, as on every build: buildId, the EIP-712 typed data of the enable operation, expiry. */
  ...userOpBuildExtraFields,
  /**
   * Beyond the contract: the mandate itself, a Delegation Framework delegation whose hash is
   * `mandateId`, and its EIP-712 typed data. The owner signs it and hands the signed delegation
   * to the delegatee, who redeems it; this service keeps no delegation signature.
   */
  delegation: Schema.optionalKey(Schema.Struct({ delegation: DfDelegation, typedData: DelegationTypedData })),
  /** When the mandate's delegation stops being redeemable (its timestamp caveat). */
  mandateExpiresAt: Schema.optionalKey(Timestamp)
}).annotate({ identifier: "HireBuild" })
export type HireBuild = typeof HireBuild.Type

/** `POST /marketplace/jobs/create/build` and `/jobs/fund/build`. */
export const JobOpBuild = Schema.Struct({
  userOp: UnsignedUserOp,
  userOpHash: Hash32,
  /** Beyond the contract: buildId, the EIP-712 typed data the owner signs, expiry. */
  ...userOpBuildExtraFields,
  /** Beyond the contract: what the operation does, and whether it can succeed here. */
  humanSummary: Schema.optionalKey(Schema.String),
  simulation: Schema.optionalKey(Simulation)
}).annotate({ identifier: "JobOpBuild" })
export type JobOpBuild = typeof JobOpBuild.Type

/** `POST /marketplace/managed/deposit/build`: a UserOpBuild that says plainly the funds leave the user's custody. */
export const ManagedDepositBuild = Schema.Struct({
  ...userOpBuildFields,
  ...userOpBuildExtraFields,
  custodial: Schema.Boolean,
  custodyLabel: Schema.String,
  managedAgentWallet: Address
}).annotate({ identifier: "ManagedDepositBuild" })
export type ManagedDepositBuild = typeof ManagedDepositBuild.Type

/** A mandate as a grant (beyond the contract: `GET /marketplace/mandates`; docs/marketplace.md). */
export const MandateSummary = Schema.Struct({
  mandateId: Hash32,
  kind: Schema.Literal("mandate"),
  accountId: Schema.String,
  accountAddress: Address,
  chainId: Schema.Int,
  agentWallet: Address,
  delegateeAddress: Address,
  perJobBudget: Schema.Finite,
  evaluator: Schema.optionalKey(Address),
  status: Schema.Literals(["pending", "active", "frozen", "expired", "revoked"]),
  createdAt: Timestamp,
  expiresAt: Timestamp,
  revokeTxHash: Schema.optionalKey(Hash32)
}).annotate({ identifier: "MandateSummary" })
export type MandateSummary = typeof MandateSummary.Type
