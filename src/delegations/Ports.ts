/**
 * The one module where the delegations feature meets its neighbours' services:
 * - the audit log (`AuditRecorder.recordDecline`: a `declined` entry and a `danger`
 *   notification linking to it) for declines at action-build time; declines at the relay
 *   are recorded by the relay itself;
 * - the relay (`Relay`, `RelayHooks`) and the one operation builder;
 * - the approvals feature (`ApprovalGate`, a port it registers into): an allowed action that the
 *   grant's approval rule holds back becomes an approval request there.
 */
import { Context, Effect, Layer } from "effect"
import type { Address, Hex } from "viem"
import { BadRequest } from "../api/Errors.ts"
import type { ApprovalRule } from "../chain/Approvals.ts"
import { Chains } from "../chain/Chains.ts"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"
import type { ApprovalRequest } from "../domain/Approvals.ts"

export { OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
export { Relay } from "../userops/Relay.ts"
export { type RelayedOperation, RelayHooks } from "../userops/RelayHooks.ts"
export { AccountRulesLive } from "../owner/Live.ts"
export { OperationBuilderLive, RelayHooksLive, RelayLive } from "../userops/Live.ts"

export interface DeclineRecord {
  readonly accountId: string
  readonly delegationId: string
  readonly chainId: number
  /** Who attempted it: the delegate's address. */
  readonly actor: string
  readonly reason: string
  readonly amount?: number
  readonly token?: string
}

export class DeclineRecorder extends Context.Service<DeclineRecorder, {
  /** Records the decline (audit event + `danger` notification); returns the event id. */
  record(decline: DeclineRecord): Effect.Effect<string>
}>()("das/delegations/DeclineRecorder") {
  static readonly layerAudit = Layer.effect(
    DeclineRecorder,
    Effect.gen(function*() {
      const audit = yield* AuditRecorder
      const chains = yield* Chains
      const record = Effect.fn("DeclineRecorder.record")(function*(d: DeclineRecord) {
        const recorded = yield* audit.recordDecline({
          accountId: d.accountId,
          actor: d.actor,
          action: "delegated_action",
          ...(d.amount === undefined ? {} : { amount: d.amount }),
          ...(d.token === undefined ? {} : { token: d.token }),
          chain: chains.nameOf(d.chainId),
          chainId: d.chainId,
          declineReason: d.reason,
          delegationId: d.delegationId
        }).pipe(Effect.orDie)
        return recorded.entry.id
      })
      return DeclineRecorder.of({ record })
    })
  ).pipe(Layer.provide(AuditLive))
}

/** An allowed, reserved action that the grant's approval rule holds back (issue 25; src/approvals). */
export interface HeldAction {
  /** The signer that asked (the delegate's key, or the owner acting in its lane). */
  readonly requester: string
  readonly delegation: {
    readonly id: string
    readonly accountId: string
    readonly signerAddress: string
    readonly chainId: number
    readonly permissionId: string
    readonly delegator: string
    readonly delegate: string
    readonly name: string
    readonly expiresAt: string
  }
  readonly reservationId: string
  readonly token: { readonly symbol: string; readonly address: Address; readonly decimals: number }
  readonly units: bigint
  readonly recipient: Address
  readonly recipientName?: string
  readonly gasToken?: "USDC" | "USDT"
  /** Identical actions while one is pending are that one request. */
  readonly shareKey: string
  /** The rule as the grant's caveat holds it, and the enforcer and DelegationManager that check it. */
  readonly rule: ApprovalRule
  /** A per-period rule (issue 44): what moved, or may still move, without approvals in the period before this action. */
  readonly unapprovedInPeriod?: bigint
  readonly enforcer: Address
  readonly delegationManager: Address
  /** The execution's call data (an ERC-20 `transfer` of the token; `0x` for the native token, sent as value). */
  readonly callData: Hex
  /** Holds the action's reservation until `until` (joins the caller's transaction). */
  readonly hold: (until: Date) => Effect.Effect<void>
  /** Frees the action's reservation (an identical request opened first: the action is that one). */
  readonly release: Effect.Effect<void>
}

export interface ApprovalHandler {
  open(action: HeldAction): Effect.Effect<ApprovalRequest>
  /** The pending request of an identical action, as the requester may see it. */
  pending(delegationId: string, shareKey: string): Effect.Effect<ApprovalRequest | undefined>
}

/**
 * Where held actions go. The approvals feature (above this one) registers its handler when its
 * layer is built; `ApprovalGateLive` is one constant, so both features share the registry.
 */
export class ApprovalGate extends Context.Service<ApprovalGate, {
  register(handler: ApprovalHandler): Effect.Effect<void>
  open(action: HeldAction): Effect.Effect<ApprovalRequest, BadRequest>
  pending(delegationId: string, shareKey: string): Effect.Effect<ApprovalRequest | undefined>
}>()("das/delegations/ApprovalGate") {
  static readonly layer = Layer.sync(ApprovalGate, () => {
    let handler: ApprovalHandler | undefined
    return ApprovalGate.of({
      register: (h) => Effect.sync(() => void (handler = h)),
      open: (action) =>
        handler === undefined
          ? Effect.fail(new BadRequest({ message: "This action needs approvals, and this service does not run the approvals feature" }))
          : handler.open(action),
      pending: (delegationId, shareKey) => handler === undefined ? Effect.succeed(undefined) : handler.pending(delegationId, shareKey)
    })
  })
}

export const ApprovalGateLive = ApprovalGate.layer
