/**
 * Settlement (docs/relay.md): exactly one audit entry per operation, appended in the
 * transaction that moves it to a terminal status; the move is conditional (`WHERE status =
 * 'submitted'`), so concurrent settlers on any number of processes append once. On-executed
 * effects run in that same transaction, and only when the receipt shows execution;
 * on-failed effects likewise when it reverted, was rejected, or was declined at submit.
 * The relay, its reconciler and the chain follower (ChainRecord.ts) all settle through here.
 */
import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { Provenance } from "../audit/AuditChain.ts"
import { OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { fromWire } from "../builds/Wire.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { IntentType, UserOpOutcome, UserOpStatus } from "../domain/Operations.ts"
import { OperationRow, rejectionReason, type Verdict } from "./OperationRow.ts"
import { RelayAudit, type OperationAuditStatus } from "./RelayAudit.ts"
import { type RelayedOperation, RelayHooks } from "./RelayHooks.ts"

export const makeSettlement = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const transaction = transactionRetryingConflicts(sql)
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

  const relayedOf = (row: OperationRow, build: StoredBuild): RelayedOperation => ({
    id: row.id,
    accountId: row.account_id,
    signerAddress: row.signer_address,
    intentType: row.intent_type as IntentType,
    chainId: row.chain_id,
    userOpHash: row.user_op_hash,
    userOp: fromWire(row.user_op),
    build
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

  /**
   * Moves a submitted operation to its terminal status with its one audit entry (and, on
   * execution, the intent's effects), in one transaction. Answers false when another
   * poller got there first.
   */
  const settle = Effect.fn("Relay.settle")(function*(row: OperationRow, verdict: Verdict, recordAs: {
    readonly provenance?: Provenance
    /** Set when the operation already has an entry (re-settled after a reorg): the new entry's key. */
    readonly entryKey?: string
    /** `failed`: the chain shows an operation recorded as refused (a stale refusal): it is corrected. */
    readonly from?: "submitted" | "failed"
  } = {}) {
    const build = yield* buildOf(row)
    const relayed = relayedOf(row, build)
    // `included` only when it executed; a reverted operation is on chain (tx evidence) but `failed`.
    const status: UserOpStatus = verdict._tag === "Receipt" && verdict.receipt.success ? "included" : "failed"
    const outcome: UserOpOutcome = verdict._tag === "Rejected" ? "rejected" : verdict.receipt.success ? "mined" : "reverted"
    const reason = verdict._tag === "Rejected"
      ? rejectionReason(verdict.error)
      : verdict.receipt.success
      ? undefined
      : (verdict.receipt.reason ?? "the operation's call reverted")
    const revertData = verdict._tag === "Receipt" && !verdict.receipt.success ? verdict.receipt.revertData : undefined
    const txHash = verdict._tag === "Receipt" ? verdict.receipt.transactionHash.toLowerCase() : undefined
    const blockNumber = verdict._tag === "Receipt" ? verdict.receipt.blockNumber.toString() : undefined

    // A transaction of its own (not the follower's pass) is run again if it lost a lock
    // conflict: hooks and audit appends lock rows of several accounts (the owner's log of a
    // delegated action, say), which concurrent writers may take in another order.
    return yield* transaction(Effect.gen(function*() {
      const moved = yield* sql`
        UPDATE user_operations
        SET status = ${status}, outcome = ${outcome}, transaction_hash = ${txHash ?? null},
            block_number = ${blockNumber ?? null}, reason = ${reason ?? null}, revert_data = ${revertData ?? null}, settled_at = now(),
            send_lease_until = NULL
        WHERE id = ${row.id} AND status = ${recordAs.from ?? "submitted"}
        RETURNING id`
      if (moved.length === 0) return false
      if (verdict._tag === "Receipt") {
        // Deployment happens in validation: an included operation deployed the account even if its call reverted.
        if (row.user_op.factory !== undefined) {
          yield* sql`UPDATE accounts SET deployment_status = 'deployed' WHERE id = ${row.account_id}`
        }
        if (verdict.receipt.success) yield* hooks.runOnExecuted(relayed, verdict.receipt)
        else yield* hooks.runOnFailed(relayed, verdict.receipt)
      } else {
        yield* hooks.runOnFailed(relayed, rejectionReason(verdict.error))
      }
      // The audit entry carries a short code (`invalid_signature`, `reverted`); the receipt keeps the full reason.
      // A reverted one carries its reason in words (the enforcer's refusal, a contract's error by name).
      const auditReason = verdict._tag === "Rejected"
        ? verdict.error.reason
        : verdict.receipt.success
        ? undefined
        : verdict.receipt.reason === undefined ? "reverted" : `reverted: ${verdict.receipt.reason}`.slice(0, 500)
      const auditId = yield* audit.recordOperation(
        auditFacts(row, build, outcome === "mined" ? "executed" : outcome === "reverted" ? "reverted" : "rejected", {
          reason: auditReason,
          txHash,
          provenance: recordAs.provenance,
          entryKey: recordAs.entryKey ?? (row.audit_event_id === null ? undefined : `resettled:${row.id}:${txHash ?? "none"}`)
        })
      )
      yield* sql`UPDATE user_operations SET audit_event_id = ${auditId} WHERE id = ${row.id}`
      return true
    })).pipe(Effect.orDie)
  })

  return { byId, byHash, load, relayedOf, buildOf, auditFacts, settle }
})

export type Settlement = Effect.Success<typeof makeSettlement>
