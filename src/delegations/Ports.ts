/**
 * The one module where the delegations feature meets its neighbours' services:
 * - the audit log (`AuditRecorder.recordDecline`: a `declined` entry and a `danger`
 *   notification linking to it) for declines at action-build time; declines at the relay
 *   are recorded by the relay itself;
 * - the relay (`Relay`, `RelayHooks`) and the one operation builder.
 */
import { Context, Effect, Layer } from "effect"
import { Chains } from "../chain/Chains.ts"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"

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
