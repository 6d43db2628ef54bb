/**
 * The other parties' steps of a job on the local ACP contract, on the owner's log: the
 * provider's acceptance and delivery, the evaluator's verdict and the escrow's payout or
 * refund are transactions the owner never signs, so no relayed operation records them.
 * This watcher reads the contract's events (every `MARKETPLACE_JOB_WATCH_INTERVAL`) and
 * appends one audit entry (with its notification) per event to the account that is the
 * job's client: actor = the provider's or evaluator's address, `txHash`, provenance
 * `onchain`. Each entry's id is the event's (transaction, log index), unique in the audit
 * log, so a restart, a re-read or a second service process never records an event twice.
 * The owner's own steps (create, fund) are recorded by the relay. docs/marketplace.md.
 */
import { Config, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { decodeEventLog, type Hex } from "viem"
import { AuditRecorder } from "../audit/Recorder.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { agentCommerceAbi } from "../chain/contracts/AgentCommerce.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"

const PHASE_ACTION: Readonly<Record<number, string>> = {
  1: "marketplace_job_terms",
  2: "marketplace_job_accepted",
  3: "marketplace_job_delivered"
}

export const JobWatchInterval = Config.Duration("MARKETPLACE_JOB_WATCH_INTERVAL").pipe(Config.withDefault(Duration.seconds(5)))

/** One pass over `net`'s contract's events from `fromBlock`; returns the next block to read from. */
export const watchOnce = Effect.fn("JobWatcher.watchOnce")(function*(net: ChainNetwork, fromBlock: bigint) {
  const { chain, network } = net
  const sql = yield* SqlClient.SqlClient
  const recorder = yield* AuditRecorder
  const tokens = yield* TokenRegistry
  const acp = network.marketplace?.acp
  if (acp === undefined) return fromBlock
  const head = yield* Effect.tryPromise(() => chain.client.getBlockNumber({ cacheTime: 0 }))
  if (head < fromBlock) return fromBlock
  const logs = yield* Effect.tryPromise(() => chain.client.getLogs({ address: acp, fromBlock, toBlock: head }))
  const decoded = logs.flatMap((log) => {
    try {
      return [{ log, event: decodeEventLog({ abi: agentCommerceAbi, topics: log.topics, data: log.data as Hex }) }]
    } catch {
      return []
    }
  })
  for (const { log, event } of decoded) {
    let jobId: bigint | undefined
    let actor = ""
    let action = ""
    let amount: bigint | undefined
    if (event.eventName === "MemoCreated") {
      jobId = event.args.jobId
      actor = event.args.sender
      action = PHASE_ACTION[event.args.nextPhase] ?? "marketplace_job_memo"
    } else if (event.eventName === "MemoSigned") {
      const memo = yield* Effect.tryPromise(() =>
        chain.client.readContract({ address: acp, abi: agentCommerceAbi, functionName: "memos", args: [event.args.memoId] })
      )
      jobId = memo[0]
      actor = event.args.signer
      action = event.args.isApproved ? "marketplace_work_approved" : "marketplace_work_rejected"
    } else if (event.eventName === "EscrowReleased") {
      jobId = event.args.jobId
      actor = acp
      amount = event.args.amount
    } else {
      continue // JobCreated, BudgetSet: the owner's own relayed operations, already on the log.
    }
    const job = yield* Effect.tryPromise(() =>
      chain.client.readContract({ address: acp, abi: agentCommerceAbi, functionName: "jobs", args: [jobId!] })
    )
    const [client, provider, , paymentToken] = job
    const accounts = yield* sql<{ id: string }>`
      SELECT id FROM accounts WHERE address = ${client.toLowerCase()} AND chain_id = ${network.chainId}`
    const account = accounts[0]
    if (account === undefined) continue // not a job of an account this service manages
    if (event.eventName === "EscrowReleased") {
      action = event.args.to.toLowerCase() === provider.toLowerCase() ? "marketplace_escrow_paid" : "marketplace_escrow_refunded"
    }
    const token = tokens.byAddress(network.chainId, paymentToken)
    yield* recorder.record({
      accountId: account.id,
      declineId: `acp:${log.transactionHash}:${log.logIndex}`,
      actor: actor.toLowerCase(),
      action: `${action} (job ${jobId})`,
      ...(amount === undefined ? {} : { amount: Number(amount) / 10 ** (token?.decimals ?? 6), token: token?.symbol ?? paymentToken }),
      chain: net.name,
      chainId: network.chainId,
      status: "executed",
      provenance: "onchain",
      txHash: log.transactionHash ?? undefined
    }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))
  }
  return head + 1n
})

/** One watcher fiber per chain with a contract: from the chain's start (idempotent), every interval; `0 seconds` turns it off. */
export const JobWatcherLive = Layer.effectDiscard(Effect.gen(function*() {
  const interval = yield* JobWatchInterval
  const chains = yield* Chains
  if (Duration.toMillis(interval) <= 0) return
  for (const net of chains.all) {
    if (net.network.marketplace === undefined) continue
    let next = 0n
    const pass = Effect.suspend(() => watchOnce(net, next)).pipe(
      Effect.tap((n) => Effect.sync(() => void (next = n))),
      Effect.asVoid
    )
    const health = makeLoopHealth(`marketplace job watcher on ${net.name}`)
    yield* health.pass(pass, undefined, `marketplace job watcher on ${net.name}: pass failed, retried next interval`).pipe(
      Effect.repeat(Schedule.spaced(interval)),
      Effect.forkScoped
    )
  }
}))

