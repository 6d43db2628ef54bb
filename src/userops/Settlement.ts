/**
 * Settlement (docs/relay.md): exactly one audit entry per operation, appended in the
 * transaction that moves it to a terminal status; the move is conditional (`WHERE status =
 * 'submitted'`), so concurrent settlers on any number of processes append once. On-executed
 * effects run in that same transaction, and only when the receipt shows execution;
 * on-failed effects likewise when it reverted, was rejected, was declined at submit, or can
 * no longer execute (the chain shows its nonce used by another operation).
 * The relay, its reconciler and the chain follower (ChainRecord.ts) all settle through here.
 *
 * In-process wake-up: once a settlement's own transaction has COMMITTED, the row it wrote is
 * handed to this process's listeners (`onSettled`: the receipt waiters) at once, ahead of the
 * cross-process NOTIFY's round trip. A settlement inside a caller's transaction (the
 * follower's pass) is not handed over: its commit is the caller's, and the NOTIFY says it.
 */
import { Effect, Option, Schema, type Scope } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { Provenance } from "../audit/AuditChain.ts"
import { OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { fromWire } from "../builds/Wire.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { IntentType, UserOpOutcome, UserOpStatus } from "../domain/Operations.ts"
import { nonceUsedReason, OperationRow, refusalOf, rejectionReason, type Verdict } from "./OperationRow.ts"
import { RelayAudit, type OperationAuditStatus } from "./RelayAudit.ts"
import { type RelayedOperation, RelayHooks } from "./RelayHooks.ts"

export const makeSettlement = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const transaction = transactionRetryingConflicts(sql)
  const listeners = new Set<(row: OperationRow) => void>()
  /** Registers `listener` for every settlement committed by this process (scoped). */
  const onSettled = (listener: (row: OperationRow) => void): Effect.Effect<void, never, Scope.Scope> =>
    Effect.acquireRelease(Effect.sync(() => listeners.add(listener)), () => Effect.sync(() => listeners.delete(listener))).pipe(Effect.asVoid)
  const decodeRows = Schema.decodeUnknownEffect(Schema.Array(OperationRow))
  const builder = yield* OperationBuilder
  const hooks = yield* RelayHooks
  const audit = yield* RelayAudit

  const byId = SqlSchema.findAll({
    Request: Schema.String,
    Result: OperationRow,
    execute: (id) => sql`SELECT * FROM user_operations WHERE id = ${id}`
  })
  const byHashOn = SqlSchema.findAll({
    Request: Schema.Struct({ chainId: Schema.Number, hash: Schema.String }),
    Result: OperationRow,
    execute: ({ chainId, hash }) =>
      sql`SELECT * FROM user_operations WHERE chain_id = ${chainId} AND user_op_hash = ${hash}
          ORDER BY (status <> 'failed') DESC, submitted_at DESC`
  })
  /** The operations stored with this hash on `chainId` (a hash names one chain: its domain has the chain id). */
  const byHash = (chainId: number, hash: string) => byHashOn({ chainId, hash })
  const load = (id: string) =>
    byId(id).pipe(
      Effect.orDie,
      Effect.flatMap((rows) => rows[0] === undefined ? Effect.die(new Error(`operation ${id} vanished`)) : Effect.succeed(rows[0]))
    )

  const relayedOf = (row: OperationRow, build: StoredBuild, settlementKey?: string): RelayedOperation => ({
    id: row.id,
    accountId: row.account_id,
    signerAddress: row.signer_address,
    intentType: row.intent_type as IntentType,
    chainId: row.chain_id,
    userOpHash: row.user_op_hash,
    userOp: fromWire(row.user_op),
    build,
    ...(settlementKey === undefined ? {} : { settlementKey })
  })

  const buildOf = (row: OperationRow) =>
    builder.findById(row.build_id).pipe(
      Effect.flatMap((b) => b === undefined ? Effect.die(new Error(`build ${row.build_id} vanished`)) : Effect.succeed(b))
    )

  const auditFacts = (row: OperationRow, build: StoredBuild, status: OperationAuditStatus, extra: {
    readonly reason?: string | undefined
    readonly declineReason?: string | undefined
    readonly txHash?: string | undefined
    readonly provenance?: Provenance | undefined
    readonly entryKey?: string | undefined
  }) => {
    const meta = build.metadata
    return {
      operationId: row.id,
      accountId: row.account_id,
      signerAddress: row.signer_address,
      intentType: row.intent_type as IntentType,
      chainId: row.chain_id,
      status,
      summary: build.humanSummary,
      ...(extra.reason !== undefined ? { reason: extra.reason } : {}),
      ...(extra.declineReason !== undefined ? { declineReason: extra.declineReason } : {}),
      ...(extra.txHash !== undefined ? { txHash: extra.txHash } : {}),
      ...(typeof meta["actor"] === "string" ? { actor: meta["actor"] } : {}),
      ...(typeof meta["delegationId"] === "string" ? { delegationId: meta["delegationId"] } : {}),
      ...(typeof meta["amount"] === "number" ? { amount: meta["amount"] } : {}),
      ...(typeof meta["token"] === "string" ? { token: meta["token"] } : {}),
      ...(typeof meta["recipient"] === "string" ? { recipient: meta["recipient"] } : {}),
      ...(extra.provenance !== undefined ? { provenance: extra.provenance } : {}),
      ...(extra.entryKey !== undefined ? { entryKey: extra.entryKey } : {})
    }
  }

  /** Our open operations at `sender`'s `nonce` other than `userOpHash`, locked in id order. */
  const openAtNonce = (at: { readonly chainId: number; readonly sender: string; readonly nonce: string; readonly userOpHash: string }) =>
    sql`SELECT * FROM user_operations
        WHERE chain_id = ${at.chainId} AND sender = ${at.sender.toLowerCase()} AND nonce = ${BigInt(at.nonce).toString()}
          AND status = 'submitted' AND user_op_hash <> ${at.userOpHash.toLowerCase()}
        ORDER BY id FOR UPDATE`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(OperationRow))))

  /**
   * Moves a submitted operation to its terminal status with its one audit entry (and, on
   * execution, the intent's effects), in one transaction. Answers false when another
   * poller got there first. An operation on chain used its sender's nonce: every other
   * open operation of ours at that nonce can never execute, and settles in the same
   * transaction (`NonceUsed`), its reservation freed by its on-failed hooks.
   */
  const settle = (row: OperationRow, verdict: Verdict, recordAs: {
    readonly provenance?: Provenance
    /** Set when the operation already has an entry (re-settled after a reorg): the new entry's key. */
    readonly entryKey?: string
    /** `failed`: the chain shows an operation recorded as refused (a stale refusal): it is corrected. */
    readonly from?: "submitted" | "failed"
  } = {}): Effect.Effect<boolean> => Effect.gen(function*() {
    const build = yield* buildOf(row)
    // `included` only when it executed; a reverted operation is on chain (tx evidence) but `failed`.
    const receipt = verdict._tag === "Receipt" ? verdict.receipt : undefined
    const status: UserOpStatus = receipt?.success === true ? "included" : "failed"
    const outcome: UserOpOutcome = receipt === undefined ? "rejected" : receipt.success ? "mined" : "reverted"
    const reason = verdict._tag === "Rejected"
      ? `${rejectionReason(verdict.error)}${verdict.note === undefined ? "" : ` (${verdict.note})`}`.slice(0, 1000)
      : verdict._tag === "NonceUsed"
      ? nonceUsedReason(verdict.transactionHash)
      : verdict.receipt.success
      ? undefined
      : (verdict.receipt.reason ?? "the operation's call reverted")
    const refusal = verdict._tag === "Rejected" ? refusalOf(verdict.error) : undefined
    const revertData = receipt !== undefined && !receipt.success ? receipt.revertData : undefined
    const txHash = receipt?.transactionHash.toLowerCase()
    const blockNumber = receipt?.blockNumber.toString()
    // A second entry for an operation that has one (corrected from the chain, re-settled after a reorg):
    // the key of this settlement, for the relay's entry and those other features append with it.
    const entryKey = recordAs.entryKey ?? (row.audit_event_id === null ? undefined : `resettled:${row.id}:${txHash ?? "none"}`)
    const relayed = relayedOf(row, build, entryKey)

    // A transaction of its own (not the follower's pass) is run again if it lost a lock
    // conflict: hooks and audit appends lock rows of several accounts (the owner's log of a
    // delegated action, say), which concurrent writers may take in another order.
    const outer = yield* Effect.serviceOption(sql.transactionService)
    const settled = yield* transaction(Effect.gen(function*() {
      const moved = yield* sql`
        UPDATE user_operations
        SET status = ${status}, outcome = ${outcome}, transaction_hash = ${txHash ?? null},
            block_number = ${blockNumber ?? null}, reason = ${reason ?? null}, revert_data = ${revertData ?? null},
            bundler_error = ${refusal === undefined ? null : JSON.stringify(refusal)}::jsonb, settled_at = now(),
            send_lease_until = NULL
        WHERE id = ${row.id} AND status = ${recordAs.from ?? "submitted"}
        RETURNING id`
      if (moved.length === 0) return undefined
      // Locked before this settlement takes any audit head (theirs is the same account's):
      // a concurrent settlement of one of them holds its row, then that head.
      const superseded = receipt === undefined ? [] : yield* openAtNonce({ chainId: row.chain_id, sender: row.sender, nonce: row.nonce, userOpHash: row.user_op_hash })
      if (receipt !== undefined) {
        // Deployment happens in validation: an included operation deployed the account even if its call reverted.
        if (row.user_op.factory !== undefined) {
          yield* sql`UPDATE accounts SET deployment_status = 'deployed' WHERE id = ${row.account_id}`
        }
        if (receipt.success) yield* hooks.runOnExecuted(relayed, receipt)
        else yield* hooks.runOnFailed(relayed, receipt)
      } else {
        yield* hooks.runOnFailed(relayed, reason!)
      }
      // The audit entry carries a short code (`invalid_signature`, `reverted`, `nonce_used`); the receipt keeps the full reason.
      // A reverted one carries its reason in words (the enforcer's refusal, a contract's error by name).
      const auditReason = verdict._tag === "Rejected"
        ? verdict.error.reason
        : verdict._tag === "NonceUsed"
        ? "nonce_used"
        : verdict.receipt.success
        ? undefined
        : verdict.receipt.reason === undefined ? "reverted" : `reverted: ${verdict.receipt.reason}`.slice(0, 500)
      const auditId = yield* audit.recordOperation(
        auditFacts(row, build, outcome === "mined" ? "executed" : outcome === "reverted" ? "reverted" : "rejected", {
          reason: auditReason,
          txHash,
          provenance: recordAs.provenance,
          entryKey
        })
      )
      // The row as committed (the answer a waiter of this process gets without reading it again).
      const [final] = yield* sql`UPDATE user_operations SET audit_event_id = ${auditId} WHERE id = ${row.id} RETURNING *`.pipe(
        Effect.flatMap(decodeRows)
      )
      for (const other of superseded) yield* settle(other, { _tag: "NonceUsed", transactionHash: txHash })
      return final
    })).pipe(Effect.orDie)
    if (settled === undefined) return false
    // Committed (a transaction of its own): this process's waiters have their answer now.
    if (Option.isNone(outer)) {
      for (const listener of listeners) {
        try {
          listener(settled)
        } catch (e) {
          yield* Effect.logWarning("a settlement listener failed", e)
        }
      }
    }
    return true
  }).pipe(Effect.withSpan("Relay.settle"))

  /**
   * The chain shows `sender`'s `nonce` used by the operation `userOpHash` (ours or anyone's):
   * every open operation of ours at that nonce with another hash settles `failed` now.
   */
  const supersede = Effect.fn("Relay.supersede")(function*(chainId: number, used: {
    readonly sender: string
    readonly nonce: bigint
    readonly userOpHash: string
    readonly transactionHash: string
  }) {
    const rows = yield* openAtNonce({ chainId, sender: used.sender, nonce: used.nonce.toString(), userOpHash: used.userOpHash }).pipe(Effect.orDie)
    let n = 0
    for (const r of rows) if (yield* settle(r, { _tag: "NonceUsed", transactionHash: used.transactionHash.toLowerCase() })) n++
    return n
  })

  return { byId, byHash, load, relayedOf, buildOf, auditFacts, settle, supersede, onSettled }
})

export type Settlement = Effect.Success<typeof makeSettlement>
