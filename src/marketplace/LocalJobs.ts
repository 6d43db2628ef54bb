/**
 * Jobs of the ACP contract on the served chain, read from the chain itself (its events):
 * where the service runs the local network (or `MARKETPLACE_ACP_CONTRACT` names a contract
 * the upstream does not index), `GET /marketplace/jobs/{chainId}/{jobId}` shows the job's
 * lifecycle with each step's transaction hash. The caller sees only jobs whose client is
 * one of its addresses (its signer or its accounts). docs/marketplace.md, "The local ACP contract".
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import { type AbiEvent, type Address, decodeEventLog, formatLog, getAbiItem, type Hex, pad, type RpcLog, toEventSelector, toHex } from "viem"
import { NotFound, UpstreamUnavailable } from "../api/Errors.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { agentCommerceAbi } from "../chain/contracts/AgentCommerce.ts"
import { Address as AddressSchema } from "../domain/Primitives.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import type { Job, JobEvent, JobStatus } from "./Domain.ts"

export class LocalJobs extends Context.Service<LocalJobs, {
  /** Whether jobs of `chainId` are read from the chain here. */
  serves(chainId: number): boolean
  get(callerAddresses: ReadonlyArray<string>, chainId: number, jobId: string): Effect.Effect<Job, NotFound | UpstreamUnavailable>
}>()("das/marketplace/LocalJobs") {
  static readonly layer = Layer.effect(LocalJobs, Effect.suspend(() => make))
  /** No chain: every job comes from the upstream. */
  static readonly layerNone = Layer.succeed(LocalJobs, LocalJobs.of({
    serves: () => false,
    get: (_, chainId, jobId) => Effect.fail(new NotFound({ message: `No job ${jobId} on chain ${chainId}` }))
  }))
}

const STATUS: ReadonlyArray<JobStatus> = ["requested", "negotiating", "funded", "submitted", "completed", "rejected", "expired"]
const readBy = (d: Job["deliverable"]): Job["deliverable"] => d === null ? null : { ...d, readByEvaluator: true }
const MEMO_LABEL: Readonly<Record<number, string>> = { 1: "Terms proposed", 2: "Job accepted", 3: "Work delivered" }

type Decoded = ReturnType<typeof decodeEventLog<typeof agentCommerceAbi>>

const make = Effect.gen(function*() {
  const chains = yield* Chains
  const tokens = yield* TokenRegistry
  const configured = yield* Config.option(Config.schema(AddressSchema, "MARKETPLACE_ACP_CONTRACT"))
  // Per chain, only the contract its local network deployed (with code there): a configured public
  // deployment is indexed by the upstream (and reading a public chain's whole log history per
  // request would be the wrong tool). `MARKETPLACE_ACP_CONTRACT` names the primary chain's.
  const served = new Map<number, { readonly chain: ChainNetwork["chain"]; readonly acp: Address }>()
  for (const net of chains.all) {
    const own = net.network.marketplace?.acp
    const acp = (net.chainId === chains.primary.chainId ? Option.getOrUndefined(configured) ?? own : own) as Address | undefined
    if (acp === undefined || own === undefined || acp.toLowerCase() !== own.toLowerCase()) continue
    // Only a chain that answers "no code there" is left to the upstream. One that cannot be read
    // at start (a busy machine, a slow node) is served: deciding here for the process's whole life
    // sent every job of the local network to the upstream ("No job 1 ... among your jobs", seen
    // at load 40); a job read while the chain stays unreadable answers 503 instead.
    const code = yield* net.chain.getCode(acp).pipe(Effect.option)
    if (Option.isSome(code) && (code.value === undefined || code.value === "0x")) continue
    served.set(net.chainId, { chain: net.chain, acp })
  }

  const unavailable = (cause: unknown) =>
    new UpstreamUnavailable({ message: `Could not read the job from the chain: ${cause instanceof Error ? cause.message : String(cause)}` })

  const get = Effect.fn("LocalJobs.get")(function*(callerAddresses: ReadonlyArray<string>, chainId: number, jobId: string) {
    const notFound = new NotFound({ message: `No job ${jobId} on chain ${chainId}` })
    const here = served.get(chainId)
    if (here === undefined || !/^[1-9][0-9]{0,30}$/.test(jobId)) return yield* notFound
    const { chain, acp } = here
    const id = BigInt(jobId)
    const job = yield* Effect.tryPromise({
      try: () => chain.client.readContract({ address: acp!, abi: agentCommerceAbi, functionName: "jobs", args: [id] }),
      catch: unavailable
    })
    const [client, provider, evaluator, paymentToken, , budget, , phase] = job
    const mine = new Set(callerAddresses.map((a) => a.toLowerCase()))
    if (client === "0x0000000000000000000000000000000000000000" || !mine.has(client.toLowerCase())) return yield* notFound
    // Only this job's events: every job event has the job id as its first indexed topic
    // (MemoSigned has the memo id there; its memos' signatures are read by memo id below).
    const rawLogs = (topics: ReadonlyArray<Hex | ReadonlyArray<Hex> | null>) =>
      Effect.tryPromise({
        try: async () =>
          ((await chain.client.request({
            method: "eth_getLogs",
            params: [{ address: acp!, fromBlock: "0x0", toBlock: "latest", topics: topics as never }]
          })) as ReadonlyArray<RpcLog>).map((l) => formatLog(l)),
        catch: unavailable
      })
    const jobLogs = yield* rawLogs([null, pad(toHex(id), { size: 32 })])
    const memoTopics = jobLogs.flatMap((log) => {
      try {
        const event = decodeEventLog({ abi: agentCommerceAbi, topics: log.topics, data: log.data as Hex })
        return event.eventName === "MemoCreated" && event.args.jobId === id ? [pad(toHex(event.args.memoId), { size: 32 })] : []
      } catch {
        return []
      }
    })
    const signedLogs = memoTopics.length === 0
      ? []
      : yield* rawLogs([toEventSelector(getAbiItem({ abi: agentCommerceAbi, name: "MemoSigned" }) as AbiEvent), memoTopics])
    // A memo id can equal the job id: the same MemoSigned log may come back from both reads.
    const unique = new Map([...jobLogs, ...signedLogs].map((l) => [`${l.transactionHash}:${l.logIndex}`, l]))
    const logs = [...unique.values()].sort((a, b) =>
      a.blockNumber === b.blockNumber ? (a.logIndex ?? 0) - (b.logIndex ?? 0) : a.blockNumber! < b.blockNumber! ? -1 : 1
    )
    const decoded = logs.flatMap((log) => {
      try {
        const event = decodeEventLog({ abi: agentCommerceAbi, topics: log.topics, data: log.data as Hex })
        return [{ event, log }]
      } catch {
        return []
      }
    })
    // Memo ids of this job, so that MemoSigned (indexed by memo) can be attributed.
    const memoIds = new Set(
      decoded.flatMap(({ event }) => event.eventName === "MemoCreated" && event.args.jobId === id ? [event.args.memoId] : [])
    )
    const ofJob = decoded.filter(({ event }) =>
      event.eventName === "MemoSigned" ? memoIds.has(event.args.memoId) : "jobId" in event.args && event.args.jobId === id
    )
    const blockTimes = new Map<bigint, string>()
    for (const { log } of ofJob) {
      if (log.blockNumber === null || blockTimes.has(log.blockNumber)) continue
      const block = yield* Effect.tryPromise({ try: () => chain.client.getBlock({ blockNumber: log.blockNumber! }), catch: unavailable })
      blockTimes.set(log.blockNumber, new Date(Number(block.timestamp) * 1000).toISOString())
    }
    const judge = evaluator === "0x0000000000000000000000000000000000000000" ? client : evaluator
    const actorOf = (who: string) =>
      who.toLowerCase() === client.toLowerCase() ? "you" : who.toLowerCase() === provider.toLowerCase() ? "agent" : who.toLowerCase() === judge.toLowerCase() ? "evaluator" : "marketplace"
    let deliverable: Job["deliverable"] = null
    let refunded = false
    const events: Array<JobEvent> = []
    for (const { event, log } of ofJob) {
      const at = blockTimes.get(log.blockNumber ?? -1n) ?? new Date(0).toISOString()
      const txHash = log.transactionHash
      const e = event as Decoded
      switch (e.eventName) {
        case "JobCreated":
          events.push({ label: "Job created", actor: "you", at, txHash })
          break
        case "BudgetSet":
          events.push({ label: "Budget set, escrow funded", actor: "you", at, txHash })
          break
        case "MemoCreated":
          events.push({ label: MEMO_LABEL[e.args.nextPhase] ?? "Memo", actor: actorOf(e.args.sender), at, txHash })
          if (e.args.nextPhase === 3) deliverable = { title: "Deliverable", lines: e.args.content.split("\n"), readByEvaluator: false }
          break
        case "MemoSigned":
          events.push({ label: e.args.isApproved ? "Work approved" : "Work rejected", actor: actorOf(e.args.signer), at, txHash })
          deliverable = readBy(deliverable)
          break
        case "EscrowReleased": {
          const toClient = e.args.to.toLowerCase() === client.toLowerCase()
          refunded = refunded || toClient
          events.push({ label: toClient ? "Escrow refunded" : "Escrow paid to the agent", actor: "marketplace", at, txHash })
          break
        }
        default:
          break
      }
    }
    const decimals = tokens.byAddress(chainId, paymentToken)?.decimals ?? 6
    const createdAt = events[0]?.at ?? new Date(0).toISOString()
    return {
      jobId,
      chainId,
      agentName: provider.toLowerCase(),
      agentWallet: provider.toLowerCase(),
      offering: "",
      status: STATUS[phase] ?? "requested",
      budgetUsd: Number(budget) / 10 ** decimals,
      createdAt,
      updatedAt: events[events.length - 1]?.at ?? createdAt,
      refunded,
      deliverable,
      events
    } satisfies Job
  })

  return LocalJobs.of({ serves: (chainId) => served.has(chainId), get })
})
