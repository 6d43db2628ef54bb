/**
 * The audit entries the chain follower writes itself (the relay writes those of its own
 * operations): an operation of a managed account that nobody built here, the owner's entry
 * of a redemption made around the relay, and the `reorged` entry that compensates an entry
 * whose block left the chain. Each under a unique key, so a block read twice writes nothing
 * twice; each raises its notification (AuditRecorder).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { chainNameOf } from "../accounts/AccountFactoryLive.ts"
import { readFrozen } from "../accounts/Accounts.ts"
import { fromRow, entryColumns, EntryRow } from "../audit/AuditChain.ts"
import { AuditLive, AuditRecorder, type Recorded } from "../audit/Recorder.ts"
import type { Inclusion } from "../chain/Inclusions.ts"
import { Network } from "../chain/Network.ts"
import { describeTransfer } from "../delegations/Redemptions.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { DelegationRepo } from "../delegations/DelegationRepo.ts"
import type { ObservedDisable, ObservedRedemption } from "./Redeemed.ts"

export interface Compensation {
  readonly key: string
  readonly accountId: string
  /** The entry that recorded what left the chain (its facts are repeated). */
  readonly entryId: string | null
  readonly txHash: string
}

export class FollowerLog extends Context.Service<FollowerLog, {
  /** The entry id the relay wrote for this inclusion's operation. */
  entryOfOperation(inclusion: Inclusion): Effect.Effect<string | undefined>
  /** An operation of a managed account unknown to the relay: its own entry. */
  foreignOperation(accountId: string, inclusion: Inclusion): Effect.Effect<string | undefined>
  /** A redemption of a known delegation: the owner's entry (written here when the relay did not carry it). */
  redemption(r: ObservedRedemption): Effect.Effect<string | undefined>
  /**
   * A known delegation disabled around the relay (the owner's other wallet): while the
   * account is not frozen that is a revoke; the record follows the chain, and the owner's
   * log says so. Answers the entry id.
   */
  disabled(d: ObservedDisable): Effect.Effect<string | undefined>
  /** A `reorged` entry after the one whose block left the chain. */
  compensate(c: Compensation): Effect.Effect<void>
}>()("das/follower/FollowerLog") {
  static readonly layer = Layer.effect(
    FollowerLog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const recorder = yield* AuditRecorder
      const tokens = yield* TokenRegistry
      const network = yield* Network
      const repo = yield* DelegationRepo
      const chainId = network.chainId
      const chain = chainNameOf(chainId)

      const byKey = (key: string) =>
        sql<{ id: string }>`SELECT id FROM audit_entries WHERE decline_id = ${key}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0]?.id)
        )
      const written = (key: string) => (r: Effect.Effect<Recorded, { readonly _tag: "AuditDuplicate" }>) =>
        r.pipe(
          Effect.map((x): string | undefined => x.entry.id),
          Effect.catchTag("AuditDuplicate", () => byKey(key))
        )

      const entryOfOperation = (inclusion: Inclusion) =>
        sql<{ audit_event_id: string | null }>`
          SELECT audit_event_id FROM user_operations
          WHERE chain_id = ${chainId} AND user_op_hash = ${inclusion.userOpHash.toLowerCase()}
            AND transaction_hash = ${inclusion.transactionHash.toLowerCase()}
          ORDER BY settled_at DESC NULLS LAST LIMIT 1`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0]?.audit_event_id ?? undefined)
        )

      /**
       * The owner's entry the relay wrote for the operation that carried the redemption: the one
       * with this transaction (a correction's follow-up after a first `failed` / `declined` one).
       */
      const ownerEntryOf = (r: ObservedRedemption) =>
        sql<{ id: string }>`
          SELECT id FROM audit_entries
          WHERE account_id = ${r.accountId} AND delegation_id = ${r.delegationId} AND tx_hash = ${r.txHash.toLowerCase()}
            AND (decline_id = ${`delegated:${r.operationId}`} OR decline_id LIKE ${`delegated:${r.operationId}:%`})
          ORDER BY chain_index DESC LIMIT 1`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows[0] === undefined ? byKey(`delegated:${r.operationId}`) : Effect.succeed(rows[0].id))
        )

      const foreignOperation = (accountId: string, inclusion: Inclusion) => {
        const key = `chain:${inclusion.blockHash.toLowerCase()}:${inclusion.logIndex}`
        return recorder.record({
          accountId,
          declineId: key,
          actor: "owner",
          action: "user_operation",
          chain,
          chainId,
          status: inclusion.success ? "executed" : "failed",
          ...(inclusion.success ? {} : { declineReason: `reverted${inclusion.receipt.reason === undefined ? "" : `: ${inclusion.receipt.reason}`}`.slice(0, 500) }),
          provenance: "onchain_unrelayed",
          txHash: inclusion.transactionHash.toLowerCase()
        }).pipe(written(key))
      }

      const redemption = (r: ObservedRedemption) => {
        if (r.operationId !== undefined) return ownerEntryOf(r)
        const key = `redeemed:${r.blockHash}:${r.logIndex}`
        const moved = r.transfers[0]
        return recorder.record({
          accountId: r.accountId,
          declineId: key,
          actor: r.delegate.toLowerCase(),
          action: "delegated_action",
          ...(moved === undefined ? {} : describeTransfer(moved, (a) => tokens.byAddress(chainId, a))),
          chain,
          chainId,
          status: "executed",
          provenance: "onchain_unrelayed",
          txHash: r.txHash,
          delegationId: r.delegationId
        }).pipe(written(key))
      }

      const compensate = (c: Compensation) =>
        Effect.gen(function*() {
          const original = c.entryId === null ? [] : yield* sql`
            SELECT ${sql.literal(entryColumns)} FROM audit_entries WHERE id = ${c.entryId}`.pipe(
            Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(EntryRow))),
            Effect.orDie
          )
          const e = original[0] === undefined ? undefined : fromRow(original[0])
          yield* recorder.record({
            accountId: c.accountId,
            declineId: c.key,
            actor: e?.actor ?? "owner",
            action: e?.action ?? "user_operation",
            ...(e?.amount == null ? {} : { amount: e.amount }),
            ...(e?.token == null ? {} : { token: e.token }),
            ...(e?.recipient == null ? {} : { recipient: e.recipient }),
            ...(e?.delegationId == null ? {} : { delegationId: e.delegationId }),
            chain,
            chainId,
            status: "reorged",
            declineReason: e === undefined ? "reorged" : `reorged: entry ${e.id} (#${e.index}) is no longer on chain`,
            provenance: "onchain_reorg",
            txHash: c.txHash
          }).pipe(Effect.asVoid, Effect.catchTag("AuditDuplicate", () => Effect.void))
        })

      const disabled = (d: ObservedDisable) =>
        Effect.gen(function*() {
          if (!(yield* readFrozen(sql, d.accountId))) {
            const touched = yield* repo.disableLegs([d.permissionId], d.delegator.toLowerCase(), d.txHash)
            const revoked = touched.length === 0 ? [] : yield* repo.revokeFullyDisabled([...new Set(touched)], d.txHash)
            if (revoked.length > 0) yield* repo.releaseForDelegations(revoked)
          }
          const key = `disabled:${d.blockHash}:${d.logIndex}`
          return yield* recorder.record({
            accountId: d.accountId,
            declineId: key,
            actor: "owner",
            action: "delegation_revoke",
            chain,
            chainId,
            status: "executed",
            provenance: "onchain_unrelayed",
            txHash: d.txHash,
            delegationId: d.delegationId
          }).pipe(written(key))
        })

      return FollowerLog.of({ entryOfOperation, foreignOperation, redemption, disabled, compensate })
    })
  ).pipe(Layer.provide(Layer.mergeAll(AuditLive, TokenRegistry.layer, DelegationRepo.layer)))
}
