/**
 * The marketplace as the handlers see it: discovery (leaderboard with an opaque
 * cursor, semantic search, agent by wallet), the shared evaluator's status, the
 * caller's own jobs, and the managed-wallet connect flow. Rules live here; the
 * upstream's wire shapes stay in `UpstreamMapping.ts`.
 */
import { Config, Context, Effect, Layer, Option, Schema } from "effect"
import { BadRequest, NotFound } from "../api/Errors.ts"
import { Address } from "../domain/Primitives.ts"
import type {
  Agent,
  AgentsPage,
  EvaluatorStatus,
  Job,
  ManagedConnection,
  ManagedConnectStart
} from "./Domain.ts"
import { MarketplaceUpstream, type UpstreamError } from "./MarketplaceUpstream.ts"
import { sameAddress } from "./UpstreamMapping.ts"

// ---------------------------------------------------------------------------
// Leaderboard cursor: opaque to clients, keyset underneath
// ---------------------------------------------------------------------------

/**
 * Where the previous page ended: the upstream offset just past it (a hint for
 * where to fetch) and the sort key of its last agent (the guarantee). A page
 * only ever holds agents that sort strictly after that key — volume descending,
 * wallet ascending — so no agent repeats across pages even when the upstream's
 * order shifts between requests (total volume never decreases).
 */
export interface LeaderboardCursor {
  readonly offset: number
  readonly volume: number
  readonly wallet: string
}

const CursorJson = Schema.Struct({
  v: Schema.Literal(1),
  o: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  k: Schema.Tuple([Schema.Finite, Schema.String])
})

export const encodeCursor = (c: LeaderboardCursor): string =>
  Buffer.from(JSON.stringify({ v: 1, o: c.offset, k: [c.volume, c.wallet.toLowerCase()] })).toString("base64url")

export const decodeCursor = (s: string): Option.Option<LeaderboardCursor> => {
  if (!/^[A-Za-z0-9_-]{1,512}$/.test(s)) return Option.none()
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(s, "base64url").toString("utf8"))
  } catch {
    return Option.none()
  }
  return Option.map(Schema.decodeUnknownOption(CursorJson)(json), (c) => ({
    offset: c.o,
    volume: c.k[0],
    wallet: c.k[1]
  }))
}

/** Leaderboard order: volume descending, then wallet ascending (a total order). */
export const compareAgents = (a: Agent, b: Agent): number =>
  b.totalVolumeUsd - a.totalVolumeUsd ||
  (a.walletAddress.toLowerCase() < b.walletAddress.toLowerCase() ? -1 : a.walletAddress.toLowerCase() > b.walletAddress.toLowerCase() ? 1 : 0)

const isAfter = (a: Agent, c: LeaderboardCursor): boolean =>
  a.totalVolumeUsd < c.volume || (a.totalVolumeUsd === c.volume && a.walletAddress.toLowerCase() > c.wallet)

/** `"8453,84532"` → `[8453, 84532]`; none when any part is not a chain id. */
export const parseChainIds = (s: string): Option.Option<ReadonlyArray<number>> => {
  const parts = s.split(",").map((p) => p.trim())
  if (parts.length === 0 || parts.length > 32 || parts.some((p) => !/^[1-9][0-9]{0,15}$/.test(p))) return Option.none()
  return Option.some([...new Set(parts.map(Number))])
}

// ---------------------------------------------------------------------------
// Managed wallet connections
// ---------------------------------------------------------------------------

/**
 * Which custodial agent wallet each signer connected: the only thing kept from
 * the connect flow (never a token). `layerMemory` is the default; the lead can
 * back the same interface with SQL.
 */
export class ManagedWallets extends Context.Service<ManagedWallets, {
  get(signer: Address): Effect.Effect<Option.Option<Address>>
  set(signer: Address, wallet: Address): Effect.Effect<void>
}>()("das/marketplace/ManagedWallets") {
  static readonly layerMemory = Layer.sync(ManagedWallets, () => {
    const bySigner = new Map<string, Address>()
    return ManagedWallets.of({
      get: (signer) => Effect.sync(() => Option.fromNullishOr(bySigner.get(signer.toLowerCase()))),
      set: (signer, wallet) => Effect.sync(() => void bySigner.set(signer.toLowerCase(), wallet))
    })
  })
}

/**
 * The addresses whose jobs a signer may read: the signer itself and its smart
 * accounts. `layerSignerOnly` knows only the signer; the lead can back it with
 * the accounts repository.
 */
export class MarketplaceCallers extends Context.Service<MarketplaceCallers, {
  addressesOf(signer: Address): Effect.Effect<ReadonlyArray<Address>>
}>()("das/marketplace/MarketplaceCallers") {
  static readonly layerSignerOnly = Layer.succeed(MarketplaceCallers, {
    addressesOf: (signer) => Effect.succeed([signer])
  })
}

/** Connect requests in flight are short-lived (the upstream's own window is about 30 minutes). */
const PENDING_TTL_MS = 30 * 60_000
const PENDING_MAX = 10_000

// ---------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------

export interface MarketplaceConfig {
  /** The shared evaluator wallet fixed at job creation, if one is provisioned. */
  readonly evaluatorWallet: Option.Option<Address>
}

export const MarketplaceConfig: Config.Config<MarketplaceConfig> = Config.all({
  evaluatorWallet: Config.option(Config.schema(Address, "MARKETPLACE_EVALUATOR_WALLET"))
})

export class Marketplace extends Context.Service<Marketplace, {
  listAgents(options: { readonly cursor?: string | undefined; readonly limit: number }): Effect.Effect<
    AgentsPage,
    BadRequest | UpstreamError
  >
  searchAgents(options: {
    readonly query: string
    readonly chainIds?: string | undefined
    readonly topK?: number | undefined
  }): Effect.Effect<ReadonlyArray<Agent>, BadRequest | UpstreamError>
  getAgent(wallet: Address): Effect.Effect<Agent, NotFound | UpstreamError>
  readonly evaluator: Effect.Effect<EvaluatorStatus>
  /** Jobs whose client is one of the caller's addresses (signer, its accounts), newest first. */
  listJobs(callerAddresses: ReadonlyArray<Address>): Effect.Effect<ReadonlyArray<Job>, UpstreamError>
  getJob(callerAddresses: ReadonlyArray<Address>, chainId: number, jobId: string): Effect.Effect<
    Job,
    NotFound | UpstreamError
  >
  managedConnection(signer: Address): Effect.Effect<ManagedConnection>
  managedConnect(signer: Address): Effect.Effect<ManagedConnectStart, UpstreamError>
  managedConnectStatus(signer: Address, requestId: string): Effect.Effect<ManagedConnection, NotFound | UpstreamError>
}>()("das/marketplace/Marketplace") {}

export const SEARCH_TOP_K_MAX = 100

export const make = Effect.fn("Marketplace.make")(function*(config: MarketplaceConfig) {
  const upstream = yield* MarketplaceUpstream
  const wallets = yield* ManagedWallets
  const pending = new Map<string, { readonly signer: string; readonly expiresAt: number }>()

  const listAgents = Effect.fn("Marketplace.listAgents")(function*(options: {
    readonly cursor?: string | undefined
    readonly limit: number
  }) {
    const limit = Math.max(1, Math.min(100, Math.trunc(options.limit)))
    let cursor: LeaderboardCursor | undefined
    if (options.cursor !== undefined && options.cursor !== "") {
      const decoded = decodeCursor(options.cursor)
      if (Option.isNone(decoded)) return yield* new BadRequest({ message: "The cursor is not one this service issued." })
      cursor = decoded.value
    }
    // Re-read a window before the offset hint so a shifted upstream order cannot skip anyone;
    // the keyset filter drops what the caller has already seen.
    const overlap = cursor === undefined ? 0 : limit
    const out: Array<Agent> = []
    const seen = new Set<string>()
    let start = cursor === undefined ? 0 : Math.max(0, cursor.offset - overlap)
    let total: number | undefined
    let lastPosition = cursor?.offset ?? 0
    let exhausted = false
    let leftover = false
    const boundNow = (): LeaderboardCursor | undefined => {
      const last = out[out.length - 1]
      return last === undefined ? cursor : { offset: 0, volume: last.totalVolumeUsd, wallet: last.walletAddress.toLowerCase() }
    }
    // A few rounds at most: enough to fill a page past dropped (wallet-less) rows, never a scan.
    for (let round = 0; round < 3 && out.length < limit && !exhausted; round++) {
      const size = limit + overlap
      const slice = yield* upstream.leaderboard({ start, limit: size })
      total = slice.total
      const ranked = slice.agents
        .map((agent, i) => ({ agent, position: start + slice.positions[i]! }))
        .sort((a, b) => compareAgents(a.agent, b.agent))
      for (const { agent, position } of ranked) {
        const key = agent.walletAddress.toLowerCase()
        if (seen.has(key)) continue
        const bound = boundNow()
        if (bound !== undefined && !isAfter(agent, bound)) continue
        if (out.length >= limit) {
          // Someone after this page is already in hand: there is a next page.
          leftover = true
          break
        }
        seen.add(key)
        out.push(agent)
        lastPosition = position + 1
      }
      exhausted = slice.rows < size || (slice.total !== undefined && start + slice.rows >= slice.total)
      start += slice.rows
    }
    const last = out[out.length - 1]
    const more = last !== undefined && (leftover || !exhausted)
    return {
      agents: out,
      nextCursor: more && last !== undefined
        ? encodeCursor({ offset: lastPosition, volume: last.totalVolumeUsd, wallet: last.walletAddress })
        : "",
      // The upstream's count; without one, what is known so far.
      total: total ?? start
    }
  })

  const searchAgents = Effect.fn("Marketplace.searchAgents")(function*(options: {
    readonly query: string
    readonly chainIds?: string | undefined
    readonly topK?: number | undefined
  }) {
    const query = options.query.trim()
    if (query.length === 0) {
      return yield* new BadRequest({ message: "`query` is required: describe the task in words (there is no browse-all)." })
    }
    let chainIds: ReadonlyArray<number> | undefined
    if (options.chainIds !== undefined && options.chainIds !== "") {
      const parsed = parseChainIds(options.chainIds)
      if (Option.isNone(parsed)) return yield* new BadRequest({ message: "`chainIds` must be comma-separated chain ids." })
      chainIds = parsed.value
    }
    if (options.topK !== undefined && (!Number.isInteger(options.topK) || options.topK < 1)) {
      return yield* new BadRequest({ message: "`topK` must be an integer of at least 1." })
    }
    const topK = options.topK === undefined ? undefined : Math.min(options.topK, SEARCH_TOP_K_MAX)
    const agents = yield* upstream.search({ query, chainIds, topK })
    // Upstream ranking is kept; a wallet listed twice is listed once.
    const seen = new Set<string>()
    return agents.filter((a) => {
      const k = a.walletAddress.toLowerCase()
      return seen.has(k) ? false : (seen.add(k), true)
    }).slice(0, topK ?? agents.length)
  })

  const getAgent = Effect.fn("Marketplace.getAgent")(function*(wallet: Address) {
    const agent = yield* upstream.agentByWallet(wallet)
    if (Option.isNone(agent)) return yield* new NotFound({ message: `No marketplace agent has the wallet ${wallet}.` })
    return agent.value
  })

  const evaluator = Effect.sync((): EvaluatorStatus =>
    Option.match(config.evaluatorWallet, {
      onNone: () => ({ connected: false }),
      onSome: (wallet) => ({ connected: true, wallet })
    })
  )

  const owns = (callerAddresses: ReadonlyArray<Address>, client: string) =>
    callerAddresses.some((a) => sameAddress(a, client))

  const listJobs = Effect.fn("Marketplace.listJobs")(function*(callerAddresses: ReadonlyArray<Address>) {
    const jobs = yield* upstream.jobs(callerAddresses)
    // Ownership is re-checked here: the upstream filter is a convenience, not a guarantee.
    return jobs
      .filter((j) => owns(callerAddresses, j.clientAddress))
      .map((j) => j.job)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.jobId.localeCompare(a.jobId))
  })

  const getJob = Effect.fn("Marketplace.getJob")(function*(
    callerAddresses: ReadonlyArray<Address>,
    chainId: number,
    jobId: string
  ) {
    const job = yield* upstream.job(chainId, jobId)
    // Someone else's job is answered exactly like a missing one.
    if (Option.isNone(job) || !owns(callerAddresses, job.value.clientAddress)) {
      return yield* new NotFound({ message: `No job ${jobId} on chain ${chainId} among your jobs.` })
    }
    return job.value.job
  })

  const managedConnection = Effect.fn("Marketplace.managedConnection")(function*(signer: Address) {
    const wallet = yield* wallets.get(signer)
    return Option.match(wallet, {
      onNone: (): ManagedConnection => ({ connected: false }),
      onSome: (walletAddress): ManagedConnection => ({ connected: true, walletAddress })
    })
  })

  const prune = (now: number) => {
    for (const [id, p] of pending) if (p.expiresAt <= now) pending.delete(id)
    while (pending.size >= PENDING_MAX) pending.delete(pending.keys().next().value!)
  }

  const managedConnect = Effect.fn("Marketplace.managedConnect")(function*(signer: Address) {
    const existing = yield* wallets.get(signer)
    if (Option.isSome(existing)) {
      return { loginUrl: "", requestId: "", alreadyConnected: true, walletAddress: existing.value }
    }
    const started = yield* upstream.connectStart
    const now = Date.now()
    prune(now)
    pending.set(started.requestId, { signer: signer.toLowerCase(), expiresAt: now + PENDING_TTL_MS })
    return { loginUrl: started.authUrl, requestId: started.requestId, alreadyConnected: false }
  })

  const managedConnectStatus = Effect.fn("Marketplace.managedConnectStatus")(function*(
    signer: Address,
    requestId: string
  ) {
    const p = pending.get(requestId)
    // A request id someone else started (or long gone) is not the caller's to poll.
    if (p === undefined || p.signer !== signer.toLowerCase() || p.expiresAt <= Date.now()) {
      const already = yield* wallets.get(signer)
      if (Option.isSome(already) && p === undefined) {
        return { connected: true, walletAddress: already.value } satisfies ManagedConnection
      }
      return yield* new NotFound({ message: "No connect request with this id is in progress for you; start again." })
    }
    const status = yield* upstream.connectStatus(requestId)
    switch (status._tag) {
      case "Pending":
        return { connected: false } satisfies ManagedConnection
      case "Expired":
        pending.delete(requestId)
        return yield* new NotFound({ message: "The connect request expired before it was approved; start again." })
      case "Approved":
        pending.delete(requestId)
        yield* wallets.set(signer, status.walletAddress)
        return { connected: true, walletAddress: status.walletAddress } satisfies ManagedConnection
    }
  })

  return Marketplace.of({
    listAgents,
    searchAgents,
    getAgent,
    evaluator,
    listJobs,
    getJob,
    managedConnection,
    managedConnect,
    managedConnectStatus
  })
})

/** Requires `MarketplaceUpstream` and `ManagedWallets`; reads `MARKETPLACE_EVALUATOR_WALLET`. */
export const MarketplaceServiceLive: Layer.Layer<
  Marketplace,
  Config.ConfigError,
  MarketplaceUpstream | ManagedWallets
> = Layer.effect(
  Marketplace,
  Effect.gen(function*() {
    return yield* make(yield* MarketplaceConfig)
  })
)
