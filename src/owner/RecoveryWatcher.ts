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
 */
import { HybridDeleGator } from "@metamask/delegation-abis"
import { Config, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, zeroAddress, zeroHash } from "viem"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { recoveryAbi } from "../chain/Recovery.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import { OwnerRepo } from "./OwnerRepo.ts"

export const RecoveryWatchInterval = Config.Duration("RECOVERY_WATCH_INTERVAL").pipe(Config.withDefault(Duration.seconds(5)))

/** One pass over `net`'s Recovery contract's events from `fromBlock`; returns the next block to read from. */
export const watchOnce = Effect.fn("RecoveryWatcher.watchOnce")(function*(net: ChainNetwork, fromBlock: bigint) {
  const { chain, network } = net
  const recovery = network.recovery?.address
  if (recovery === undefined) return fromBlock
  const sql = yield* SqlClient.SqlClient
  const recorder = yield* AuditRecorder
  const repo = yield* OwnerRepo
  const head = yield* Effect.tryPromise(() => chain.client.getBlockNumber({ cacheTime: 0 }))
  if (head < fromBlock) return fromBlock
  const events = yield* Effect.tryPromise(() =>
    chain.client.getContractEvents({ address: recovery, abi: recoveryAbi, fromBlock, toBlock: head })
  )
  for (const event of events) {
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
        if (args.recoveryId === zeroHash) continue // only approvals voided: the owner's own operation says it
        action = "recovery_cancelled"
        actor = "owner"
        break
      default:
        continue
    }
    if (args.account === undefined || event.transactionHash === null) continue
    const rows = yield* sql<{ id: string; signer_address: string }>`
      SELECT id, signer_address FROM accounts WHERE address = ${args.account.toLowerCase()} AND chain_id = ${network.chainId}`
    const account = rows[0]
    if (account === undefined) continue // not an account this service manages
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
  }
  return head + 1n
})

/** One watcher fiber per chain with a Recovery contract: from the chain's start (idempotent), every interval; `0 seconds` turns it off. */
export const RecoveryWatcherLive = Layer.effectDiscard(Effect.gen(function*() {
  const interval = yield* RecoveryWatchInterval
  const chains = yield* Chains
  if (Duration.toMillis(interval) <= 0) return
  for (const net of chains.all) {
    if (net.network.recovery === undefined) continue
    let next = 0n
    const pass = Effect.suspend(() => watchOnce(net, next)).pipe(
      Effect.tap((n) => Effect.sync(() => void (next = n))),
      Effect.asVoid
    )
    const health = makeLoopHealth(`recovery watcher on ${net.name}`)
    yield* health.pass(pass, undefined, `recovery watcher on ${net.name}: pass failed, retried next interval`).pipe(
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  }
})).pipe(Layer.provide([AuditLive, OwnerRepo.layer]))
