/**
 * The guardians' side of a recovery on the owner's log (issue 27, docs/account.md "Recovery
 * events"): approvals, the start and the execution are transactions of guardians or of anyone,
 * never the owner's operations, so no relayed operation records them. This watcher reads the
 * Recovery contract's events (every `RECOVERY_WATCH_INTERVAL`) and appends one audit entry per
 * event to the account it concerns (actor: the guardian, `txHash`, provenance `onchain`); the
 * entry raises the owner's notification on every channel (feed, stream, webhooks) in the same
 * transaction. A cancel that stopped a started recovery is recorded too (the owner's operation
 * has its own entry; this one says what it stopped). Each entry's id is the event's
 * (chain, transaction, log index), so a re-read, a restart or a second process records nothing
 * twice. The owner's settings changes (guardians, delay, safe address) are the owner's
 * operations, already on the log with their intents.
 *
 * An executed recovery that named a new EOA owner hands the account to that key's sign-in
 * (`OwnerRepo.changeOwnerKey`): the old key no longer reaches the account.
 *
 * Its position (the next block to read, per chain) is in `recovery_watch_cursor` (migration
 * 0370): a restart resumes there, so it neither misses an event nor reads the chain from its
 * start again. A guardian's operation built through the service (src/owner/Guardians.ts) records
 * its events at once, when the relay settles it (`recordTransaction`), under the same ids.
 */
import { HybridDeleGator } from "@metamask/delegation-abis"
import { Config, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, type Hash, parseEventLogs, zeroAddress, zeroHash } from "viem"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { recoveryAbi } from "../chain/Recovery.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import { OwnerRepo } from "./OwnerRepo.ts"

export const RecoveryWatchInterval = Config.Duration("RECOVERY_WATCH_INTERVAL").pipe(Config.withDefault(Duration.seconds(5)))

/** A Recovery event as viem decodes it, with where it was emitted. */
export interface RecoveryEvent {
  readonly eventName: string
  readonly args: unknown
  readonly transactionHash: Hash | null
  readonly logIndex: number | null
}

/** One entry on the owner's log for `event` (once per event, whoever reads it first); an execution hands the account to its new key. */
export const recordEvent = Effect.fn("RecoveryWatcher.recordEvent")(function*(net: ChainNetwork, event: RecoveryEvent) {
  const { chain, network } = net
  const sql = yield* SqlClient.SqlClient
  const recorder = yield* AuditRecorder
  const repo = yield* OwnerRepo
  const args = event.args as { account?: Address; recoveryId?: `0x${string}`; guardian?: Address; owner?: Address }
  let action: string
  let actor: string
  switch (event.eventName) {
    case "RecoveryApproved":
      action = "recovery_approved"
      actor = args.guardian ?? "guardian"
      break
    case "RecoveryStarted":
      action = "recovery_started"
      actor = "guardians"
      break
    case "RecoveryExecuted":
      action = "recovery_executed"
      actor = "guardians"
      break
    case "RecoveryCancelled":
      if (args.recoveryId === zeroHash) return // only approvals voided: the owner's own operation says it
      action = "recovery_cancelled"
      actor = "owner"
      break
    default:
      return
  }
  if (args.account === undefined || event.transactionHash === null || event.logIndex === null) return
  const rows = yield* sql<{ id: string; signer_address: string }>`
    SELECT id, signer_address FROM accounts WHERE address = ${args.account.toLowerCase()} AND chain_id = ${network.chainId}`
  const account = rows[0]
  if (account === undefined) return // not an account this service manages
  yield* recorder.record({
    accountId: account.id,
    declineId: `recovery:${network.chainId}:${event.transactionHash}:${event.logIndex}`,
    actor: actor.toLowerCase(),
    action,
    chain: net.name,
    chainId: network.chainId,
    status: "executed",
    provenance: "onchain",
    txHash: event.transactionHash
  }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))
  if (event.eventName === "RecoveryExecuted") {
    // The owner the chain holds now (a later change may already have replaced the one the event names).
    const owner = yield* Effect.tryPromise(() =>
      chain.client.readContract({ address: args.account!, abi: HybridDeleGator, functionName: "owner" })
    )
    if (owner !== zeroAddress && owner.toLowerCase() !== account.signer_address) {
      yield* repo.changeOwnerKey({ accountId: account.id, oldSigner: account.signer_address, newSigner: owner, txHash: event.transactionHash })
    }
  }
})

/** The Recovery events of one transaction (read from its receipt on chain), each recorded as the watcher would. */
export const recordTransaction = Effect.fn("RecoveryWatcher.recordTransaction")(function*(net: ChainNetwork, txHash: Hash) {
  const recovery = net.network.recovery?.address
  if (recovery === undefined) return
  const receipt = yield* Effect.tryPromise(() => net.chain.client.getTransactionReceipt({ hash: txHash }))
  const logs = receipt.logs.filter((l) => l.address.toLowerCase() === recovery.toLowerCase())
  for (const event of parseEventLogs({ abi: recoveryAbi, logs })) yield* recordEvent(net, event)
})

/** One pass over `net`'s Recovery contract's events from `fromBlock`; returns the next block to read from. */
export const watchOnce = Effect.fn("RecoveryWatcher.watchOnce")(function*(net: ChainNetwork, fromBlock: bigint) {
  const { chain, network } = net
  const recovery = network.recovery?.address
  if (recovery === undefined) return fromBlock
  const head = yield* Effect.tryPromise(() => chain.client.getBlockNumber({ cacheTime: 0 }))
  if (head < fromBlock) return fromBlock
  const events = yield* Effect.tryPromise(() =>
    chain.client.getContractEvents({ address: recovery, abi: recoveryAbi, fromBlock, toBlock: head })
  )
  for (const event of events) yield* recordEvent(net, event)
  return head + 1n
})

/** Where the watcher of `chainId` resumes (0: it never ran). */
export const readCursor = Effect.fn("RecoveryWatcher.readCursor")(function*(chainId: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ next_block: string }>`SELECT next_block::text AS next_block FROM recovery_watch_cursor WHERE chain_id = ${chainId}`
  return rows[0] === undefined ? 0n : BigInt(rows[0].next_block)
})

/** Moves the position forward only (a second process's slower pass never moves it back). */
const saveCursor = Effect.fn("RecoveryWatcher.saveCursor")(function*(chainId: number, next: bigint) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO recovery_watch_cursor (chain_id, next_block) VALUES (${chainId}, ${next.toString()})
             ON CONFLICT (chain_id) DO UPDATE SET next_block = GREATEST(recovery_watch_cursor.next_block, EXCLUDED.next_block), updated_at = now()`
})

/**
 * One pass from the stored position, which moves only after the pass's entries are written: a
 * pass cut short is read again (its entries are not repeated), never skipped.
 */
export const watchFromCursor = Effect.fn("RecoveryWatcher.watchFromCursor")(function*(net: ChainNetwork) {
  const from = yield* readCursor(net.chainId)
  const next = yield* watchOnce(net, from)
  if (next !== from) yield* saveCursor(net.chainId, next)
  return next
})

/** One watcher fiber per chain with a Recovery contract, from its stored position, every interval; `0 seconds` turns it off. */
export const RecoveryWatcherLive = Layer.effectDiscard(Effect.gen(function*() {
  const interval = yield* RecoveryWatchInterval
  const chains = yield* Chains
  if (Duration.toMillis(interval) <= 0) return
  for (const net of chains.all) {
    if (net.network.recovery === undefined) continue
    const health = makeLoopHealth(`recovery watcher on ${net.name}`)
    yield* health.pass(Effect.asVoid(watchFromCursor(net)), undefined, `recovery watcher on ${net.name}: pass failed, retried next interval`).pipe(
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  }
})).pipe(Layer.provide([AuditLive, OwnerRepo.layer]))
