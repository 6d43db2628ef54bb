/**
 * The delegations' rows as DelegationRepo reads and writes them: Schema-decoded row types
 * (snake_case, as stored) and the inputs of its inserts. jsonb columns written by the
 * service from typed values (`policy_set`, `legs`) are checked for their shape and passed
 * through as stored.
 */
import { Schema } from "effect"
import type { Address, Hash } from "viem"
import { UserOpBuild } from "../domain/Operations.ts"
import type { Delegation as DfDelegation } from "./Caveats.ts"
import type { GrantMandate, PolicySet } from "./Domain.ts"
import type { GrantScope } from "./Grant.ts"

/**
 * A leg as stored: the DF delegation (signed once created). A grant has one leg (Grant.ts)
 * covering every budget token (`scope`); `token` is then the first budget token.
 */
export interface Leg {
  readonly permissionId: Hash
  readonly token: { readonly symbol: string; readonly address: Address; readonly decimals: number }
  readonly delegation: DfDelegation
  readonly scope?: GrantScope
}

/** A jsonb column, stored by this service from a typed value: checked for its shape, passed through as is. */
const JsonObject = <A extends object>(identifier: string) =>
  Schema.declare((u: unknown): u is A => typeof u === "object" && u !== null && !Array.isArray(u), { identifier })
const JsonArray = <A>(identifier: string) =>
  Schema.declare((u: unknown): u is ReadonlyArray<A> => Array.isArray(u), { identifier })

const PolicySetJson = JsonObject<PolicySet>("PolicySetJson")
export const LegsJson = JsonArray<Leg>("LegsJson")
/**
 * What a replaced grant had spent when its replacement was built (docs/approvals.md, "Asking for
 * more"): units per budget token (lowercase address) and actions. The replacement's on-chain
 * limits are its totals less these; its reads add them back.
 */
export interface Carried {
  readonly units: Readonly<Record<string, string>>
  readonly actions: number
}
const CarriedJson = JsonObject<Carried>("CarriedJson")
/** The mandate a grant was built from (migration 0600), as the service stored it. */
const MandateJson = JsonObject<GrantMandate>("MandateJson")

const StoredStatus = Schema.Literals(["pending", "active", "failed", "revoked"])

export const DelegationRow = Schema.Struct({
  id: Schema.String,
  build_id: Schema.String,
  signer_address: Schema.String,
  account_id: Schema.String,
  delegator_address: Schema.String,
  permission_id: Schema.String,
  name: Schema.String,
  kind: Schema.String,
  icon: Schema.String,
  delegatee_address: Schema.String,
  chain_id: Schema.Number,
  policy_set: PolicySetJson,
  human_summary: Schema.String,
  legs: LegsJson,
  status: StoredStatus,
  enable_user_op_hash: Schema.String,
  enable_tx_hash: Schema.NullOr(Schema.String),
  failure_reason: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  /** The grant this one replaced (asking for more) and what that one had spent. */
  replaces: Schema.NullOr(Schema.String),
  carried: Schema.NullOr(CarriedJson),
  /** The mandate it was built from (docs/ap2.md); null for other grants. */
  mandate: Schema.NullOr(MandateJson),
  /** The account's freeze (joined from `accounts`). */
  frozen: Schema.Boolean
})
export type DelegationRow = typeof DelegationRow.Type

export const BuildRow = Schema.Struct({
  id: Schema.String,
  op_build_id: Schema.String,
  signer_address: Schema.String,
  account_id: Schema.String,
  name: Schema.String,
  kind: Schema.String,
  delegatee_address: Schema.String,
  chain_id: Schema.Number,
  policy_set: PolicySetJson,
  human_summary: Schema.String,
  legs: LegsJson,
  user_op_hash: Schema.String,
  expires_at: Schema.Date,
  replaces: Schema.NullOr(Schema.String),
  carried: Schema.NullOr(CarriedJson),
  mandate: Schema.NullOr(MandateJson)
})
export type BuildRow = typeof BuildRow.Type

export const SnapshotRow = Schema.Struct({
  id: Schema.String,
  delegation_id: Schema.String,
  permission_id: Schema.String,
  policy_set: PolicySetJson,
  human_summary: Schema.String,
  captured_at: Schema.Date,
  enable_tx_hash: Schema.String
})
export type SnapshotRow = typeof SnapshotRow.Type

/** A reservation as the submit-time re-check reads it (locked). */
export const ReservationCheckRow = Schema.Struct({
  status: Schema.String,
  units: Schema.String,
  token_address: Schema.String,
  recipient: Schema.String,
  /** Released by the bundler's refusal of an earlier submission of its build, and still unexpired. */
  retakable: Schema.Boolean
})
export type ReservationCheckRow = typeof ReservationCheckRow.Type

/** A delegation's reservations per token: final (since the token's period start) and open, in units and counts. */
export const LedgerRow = Schema.Struct({
  token_address: Schema.String,
  final_units: Schema.String,
  open_units: Schema.String,
  final_n: Schema.Number,
  open_n: Schema.Number
})
export type LedgerRow = typeof LedgerRow.Type

/**
 * `ledgerWithOpenPayments`' rows in one statement: the ledger's (`kind: ledger`) and each open
 * reservation of an x402 payment not yet recorded settled (`kind: payment`: its payment
 * delegation's hash and the units it holds).
 */
export const LedgerOrPaymentRow = Schema.Struct({
  kind: Schema.Literals(["ledger", "payment"]),
  token_address: Schema.String,
  final_units: Schema.NullOr(Schema.String),
  open_units: Schema.NullOr(Schema.String),
  final_n: Schema.NullOr(Schema.Number),
  open_n: Schema.NullOr(Schema.Number),
  payment_hash: Schema.NullOr(Schema.String),
  units: Schema.NullOr(Schema.String)
})

/** An open reservation of an x402 payment the follower has not recorded settled. */
export interface OpenPayment {
  readonly paymentHash: string
  readonly token: string
  readonly units: bigint
}

/** `delegation_lock_ledger`'s rows: the locked grant's status and frozen flag, each with one token's ledger (none: nulls). */
export const LockedLedgerRow = Schema.Struct({
  status: DelegationRow.fields.status,
  frozen: Schema.Boolean,
  token_address: Schema.NullOr(Schema.String),
  final_units: Schema.NullOr(Schema.String),
  open_units: Schema.NullOr(Schema.String),
  final_n: Schema.NullOr(Schema.Number),
  open_n: Schema.NullOr(Schema.Number)
})

/** An open action build sharing `shareKey`: its stored answer, with its reservation. */
export const OpenActionRow = Schema.Struct({ answer: UserOpBuild, reservation_id: Schema.String })
export type OpenActionRow = typeof OpenActionRow.Type

export interface NewBuild {
  readonly id: string
  readonly opBuildId: string
  readonly signerAddress: string
  readonly accountId: string
  readonly name: string
  readonly kind: string
  readonly delegateeAddress: string
  readonly chainId: number
  readonly policySet: PolicySet
  readonly humanSummary: string
  readonly legs: ReadonlyArray<Leg>
  readonly userOpHash: string
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly replaces?: { readonly delegationId: string; readonly carried: Carried }
  readonly mandate?: GrantMandate
}

export interface NewDelegation {
  readonly id: string
  readonly buildId: string
  readonly signerAddress: string
  readonly accountId: string
  readonly delegatorAddress: string
  readonly permissionId: string
  readonly name: string
  readonly kind: string
  readonly icon: string
  readonly delegateeAddress: string
  readonly chainId: number
  readonly policySet: PolicySet
  readonly humanSummary: string
  readonly legs: ReadonlyArray<Leg>
  readonly enableUserOpHash: string
  readonly replaces?: { readonly delegationId: string; readonly carried: Carried }
  readonly mandate?: GrantMandate
}

export interface NewReservation {
  readonly id: string
  readonly delegationId: string
  readonly token: string
  readonly units: bigint
  readonly recipient: string
  readonly expiresAt: Date
  /** The action build it is taken with, when both are stored in one transaction. */
  readonly build?: { readonly userOpHash: string; readonly opBuildId: string }
}
