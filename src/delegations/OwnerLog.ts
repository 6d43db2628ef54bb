/**
 * The owner's log shows the owner's money (issue 12): every delegated action the relay
 * settles is also an entry on the DELEGATOR's chain, with the delegate's address as actor,
 * the amount, token and recipient that left the account, the delegation and the
 * transaction; the delegator's signer is notified. The delegate's own entry (its own
 * account's operation) is the relay's, as for any operation.
 *
 * Relay hooks, so the entry commits with the settlement. The amount comes from the chain
 * (the ERC-20 `Transfer`s out of the delegator in the operation's own logs); the build's
 * facts are the fallback for a failure, which moved nothing. Redemptions that reach the
 * chain around the relay are logged by the chain follower (src/follower), under the same
 * rules. Keys: `delegated:<operationId>` (one owner entry per settlement of the operation:
 * a later one, e.g. the chain correcting a refusal, appends `delegated:<operationId>:<its key>`).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Chains } from "../chain/Chains.ts"
import type { AuditStatus } from "../audit/AuditChain.ts"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"
import type { UserOpReceipt } from "../chain/Bundler.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { type RelayedOperation, RelayHooks, RelayHooksLive } from "./Ports.ts"
import { describeTransfer, transfersOut } from "../follower/Redemptions.ts"

interface GrantRow {
  readonly account_id: string
  readonly delegator_address: string
  readonly delegatee_address: string
}

export const OwnerLogLive = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const hooks = yield* RelayHooks
  const recorder = yield* AuditRecorder
  const chains = yield* Chains
  const tokens = yield* TokenRegistry

  const meta = (op: RelayedOperation, key: string) => {
    const v = op.build.metadata[key]
    return typeof v === "string" || typeof v === "number" ? v : undefined
  }

  const record = (op: RelayedOperation, entry: {
    readonly status: AuditStatus
    readonly receipt?: UserOpReceipt
    readonly declineReason?: string
  }) =>
    Effect.gen(function*() {
      const delegationId = meta(op, "delegationId")
      if (typeof delegationId !== "string") return
      const rows = yield* sql<GrantRow>`
        SELECT account_id, delegator_address, delegatee_address FROM delegations WHERE id = ${delegationId}`.pipe(Effect.orDie)
      const grant = rows[0]
      if (grant === undefined) return
      const moved = entry.receipt === undefined ? [] : transfersOut(entry.receipt.logs, grant.delegator_address)
      const facts = moved[0] !== undefined
        ? describeTransfer(moved[0], (a) => tokens.byAddress(op.chainId, a))
        : {
          ...(typeof meta(op, "amount") === "number" ? { amount: meta(op, "amount") as number } : {}),
          ...(typeof meta(op, "token") === "string" ? { token: meta(op, "token") as string } : {}),
          ...(typeof meta(op, "recipient") === "string" ? { recipient: meta(op, "recipient") as string } : {})
        }
      const txHash = entry.receipt?.transactionHash.toLowerCase()
      yield* recorder.record({
        accountId: grant.account_id,
        // A later settlement of the operation (corrected from the chain) is a follow-up entry, never dropped as a duplicate.
        declineId: op.settlementKey === undefined ? `delegated:${op.id}` : `delegated:${op.id}:${op.settlementKey}`,
        actor: grant.delegatee_address,
        action: "delegated_action",
        ...facts,
        chain: chains.nameOf(op.chainId),
        chainId: op.chainId,
        status: entry.status,
        ...(entry.declineReason === undefined ? {} : { declineReason: entry.declineReason }),
        ...(txHash === undefined ? {} : { txHash }),
        delegationId
      }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))
    })

  yield* hooks.registerOnExecuted("delegated_action", "delegations.owner_log", (op, receipt) =>
    record(op, { status: "executed", receipt }))
  yield* hooks.registerOnFailed("delegated_action", "delegations.owner_log", (op, failure) => {
    if (typeof failure !== "string") {
      return record(op, { status: "failed", receipt: failure, declineReason: `reverted${failure.reason === undefined ? "" : `: ${failure.reason}`}`.slice(0, 500) })
    }
    const declined = /^declined: (.+)$/.exec(failure)
    return declined !== null
      ? record(op, { status: "declined", declineReason: declined[1]! })
      : record(op, { status: "failed", declineReason: failure.split(" (")[0]!.slice(0, 500) })
  })
})).pipe(Layer.provide(Layer.mergeAll(AuditLive, TokenRegistry.layer, RelayHooksLive)))
