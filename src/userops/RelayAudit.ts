/**
 * The relay's one call site into the audit log and the notifications feed (issue 3's
 * `AuditChain` / `Notifications`). `recordOperation` runs inside the caller's SQL
 * transaction: the same one that moves the operation to its terminal status, so the
 * entry and the status change commit together or not at all.
 */
import { Context, Effect, Layer } from "effect"
import { Chains } from "../chain/Chains.ts"
import type { Provenance } from "../audit/AuditChain.ts"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"
import type { IntentType } from "../domain/Operations.ts"

export type OperationAuditStatus = "executed" | "reverted" | "rejected" | "declined"

export interface OperationAuditFacts {
  readonly operationId: string
  readonly accountId: string
  readonly signerAddress: string
  readonly intentType: IntentType
  readonly chainId: number
  readonly status: OperationAuditStatus
  /** Who acted: `owner` (default) or a delegatee's address. */
  readonly actor?: string
  /** Plain-language summary of the operation (from its build). */
  readonly summary: string | null
  readonly declineReason?: string
  /** The bundler's or the chain's reason, for rejected and reverted operations. */
  readonly reason?: string
  readonly txHash?: string
  readonly delegationId?: string
  readonly amount?: number
  readonly token?: string
  readonly recipient?: string
  /** Where the evidence lives; by default `onchain` with a transaction, `offchain_only` without. */
  readonly provenance?: Provenance
  /**
   * A second entry for an operation that already has one (a correction from the chain, a
   * re-inclusion after a reorg): written under this unique key instead of the operation id.
   */
  readonly entryKey?: string
}

export class RelayAudit extends Context.Service<RelayAudit, {
  /** Appends the operation's one audit entry (and its notification); answers the entry's id. */
  recordOperation(facts: OperationAuditFacts): Effect.Effect<string>
}>()("das/userops/RelayAudit") {}

/**
 * Over issue 3's `AuditRecorder` (audit entry + its notification, joining the open
 * transaction). Mapping: executed → `executed` (with the transaction hash); reverted →
 * `failed` with the transaction hash (on-chain evidence) and the revert reason;
 * rejected by the bundler → `failed`, off-chain only, with the bundler's reason;
 * declined by policy → `declined` with its reason.
 */
export const RelayAuditLive = Layer.effect(
  RelayAudit,
  Effect.gen(function*() {
    const recorder = yield* AuditRecorder
    const chains = yield* Chains
    return RelayAudit.of({
      recordOperation: (facts) => {
        const common = {
          accountId: facts.accountId,
          ...(facts.entryKey === undefined ? { operationId: facts.operationId } : { declineId: facts.entryKey }),
          actor: facts.actor ?? "owner",
          action: facts.intentType,
          amount: facts.amount,
          token: facts.token,
          chain: chains.nameOf(facts.chainId),
          chainId: facts.chainId,
          txHash: facts.txHash,
          delegationId: facts.delegationId,
          recipient: facts.recipient,
          provenance: facts.provenance
        }
        const recorded = facts.status === "declined"
          ? recorder.recordDecline({ ...common, declineReason: facts.declineReason ?? "declined" })
          : recorder.record({
            ...common,
            status: facts.status === "executed" ? "executed" : "failed",
            declineReason: facts.status === "executed" ? undefined : facts.reason
          })
        return recorded.pipe(
          Effect.map((r) => r.entry.id),
          // Unreachable while settlements move the status conditionally: a second entry for an
          // operation is a bug, so it rolls the whole settlement back instead of passing quietly.
          Effect.orDie,
          Effect.withSpan("RelayAudit.recordOperation")
        )
      }
    })
  })
).pipe(Layer.provide(AuditLive))
