/**
 * The chain follower's own entries (the `FollowerLog` port of src/follower/FollowerLog.ts): an
 * operation of a managed account that nobody built here, the owner's (and the delegate's) entry
 * of a redemption made around the relay, a delegation disabled around it, and the `reorged`
 * entry compensating one whose block left the chain. They read and move delegation rows, so
 * they live with the delegations feature.
 */
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { formatEther } from "viem"
import { readFrozen } from "../accounts/Accounts.ts"
import { fromRow, entryColumns, EntryRow } from "../audit/AuditChain.ts"
import { AuditLive, AuditRecorder, type Recorded } from "../audit/Recorder.ts"
import type { Inclusion } from "../chain/Inclusions.ts"
import { Chains } from "../chain/Chains.ts"
import { type Compensation, FollowerLog } from "../follower/FollowerLog.ts"
import type { ObservedDisable, ObservedRedemption } from "../follower/Redeemed.ts"
import { RedemptionHooks, RedemptionHooksLive } from "../follower/RedemptionHooks.ts"
import type { Moved } from "../follower/RedemptionChains.ts"
import { RedemptionRepo } from "../follower/RedemptionRepo.ts"
import { describeTransfer } from "../follower/Redemptions.ts"
import { isNative, NATIVE_SYMBOL } from "../tokens/Native.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { DelegationRepo } from "./DelegationRepo.ts"

export const FollowerEntriesLive = Layer.effect(
  FollowerLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const recorder = yield* AuditRecorder
    const tokens = yield* TokenRegistry
    const chains = yield* Chains
    const repo = yield* DelegationRepo
    const redemptions = yield* RedemptionRepo
    const hooks = yield* RedemptionHooks

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

    const entryOfOperation = (chainId: number, inclusion: Inclusion) =>
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
        WHERE account_id = ${r.accountId} AND delegation_id = ${r.delegationId ?? null} AND tx_hash = ${r.txHash.toLowerCase()}
          AND (decline_id = ${`delegated:${r.operationId}`} OR decline_id LIKE ${`delegated:${r.operationId}:%`})
        ORDER BY chain_index DESC LIMIT 1`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows[0] === undefined ? byKey(`delegated:${r.operationId}`) : Effect.succeed(rows[0].id))
      )

    const foreignOperation = (chainId: number, accountId: string, inclusion: Inclusion) => {
      const chain = chains.nameOf(chainId)
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

    /** An entry's amount, token and recipient for what moved (ETH by value; a token by its symbol when known). */
    const factsOf = (chainId: number, m: Moved | undefined) =>
      m === undefined
        ? {}
        : isNative(m.token)
        ? { amount: Number(formatEther(m.units)), token: NATIVE_SYMBOL, recipient: m.to.toLowerCase() }
        : describeTransfer({ token: m.token, to: m.to, units: m.units, logIndex: m.logIndex ?? 0 }, (a) => tokens.byAddress(chainId, a))

    /**
     * A redemption as it happened: the owner's entry (the relay's, when it carried it) with the
     * redeemer as actor and what moved; when someone the delegate passed the grant to redeemed it,
     * an entry on the delegate's log too (a managed account's); and the record of the whole chain.
     * A grant this service did not build is recorded as such (`foreign_grant_redeemed`, no delegation).
     */
    const redemption = (chainId: number, r: ObservedRedemption) =>
      Effect.gen(function*() {
        const chain = chains.nameOf(chainId)
        const facts = factsOf(chainId, r.moved[0])
        const key = `redeemed:${r.blockHash}:${r.logIndex}`
        const common = {
          actor: r.redeemer,
          ...facts,
          chain,
          chainId,
          status: "executed" as const,
          provenance: "onchain_unrelayed" as const,
          txHash: r.txHash,
          ...(r.delegationId === undefined ? {} : { delegationId: r.delegationId })
        }
        // A feature that knows this redemption better (an x402 payment) writes its entries itself.
        const claimed = r.operationId === undefined ? yield* hooks.claim(chainId, r) : undefined
        const ownerEntry = claimed !== undefined
          ? claimed.ownerEntryId
          : r.operationId !== undefined
          ? yield* ownerEntryOf(r)
          : yield* recorder.record({
            ...common,
            accountId: r.accountId,
            declineId: key,
            action: r.delegationId === undefined ? "foreign_grant_redeemed" : "delegated_action"
          }).pipe(written(key))
        let delegateEntry = claimed?.delegateEntryId
        if (claimed === undefined && r.delegationId !== undefined && r.redeemer.toLowerCase() !== r.delegate.toLowerCase()) {
          const delegate = yield* repo.accountByAddress(r.delegate.toLowerCase(), chainId)
          const via = `redeemed-via:${r.blockHash}:${r.logIndex}`
          if (delegate !== undefined) {
            delegateEntry = yield* recorder.record({ ...common, accountId: delegate.id, declineId: via, action: "delegated_action" }).pipe(written(via))
          }
        }
        yield* redemptions.insert({
          chainId,
          blockHash: r.blockHash,
          logIndex: r.logIndex,
          blockNumber: r.blockNumber,
          txHash: r.txHash,
          rootHash: r.rootHash,
          delegationId: r.delegationId,
          accountId: r.accountId,
          redeemer: r.redeemer.toLowerCase(),
          via: r.via,
          userOpHash: r.redeemerUserOpHash,
          chain: r.chain,
          moved: r.moved,
          ownerEntryId: ownerEntry,
          delegateEntryId: delegateEntry
        })
        return ownerEntry
      })

    const compensate = (chainId: number, c: Compensation) =>
      Effect.gen(function*() {
        const chain = chains.nameOf(chainId)
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

    const disabled = (chainId: number, d: ObservedDisable) =>
      Effect.gen(function*() {
        const chain = chains.nameOf(chainId)
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
).pipe(Layer.provide(Layer.mergeAll(AuditLive, TokenRegistry.layer, DelegationRepo.layer, RedemptionRepo.layer, RedemptionHooksLive)))
