/**
 * The live agent stats stream (`GET /marketplace/agents/stream`).
 *
 * The upstream has no stream, so ONE shared poller reads agent metrics every
 * poll interval, whatever the number of subscribers (one leaderboard request,
 * plus one request per explicitly subscribed wallet outside it, deduplicated
 * across all subscribers), and pushes a stat only when it changed. It does not
 * poll at all while nobody listens.
 *
 * A changed stat is encoded once; the poller then writes those bytes to every
 * SSE subscriber's node response in one synchronous loop (`SseFanout.ts`): no
 * fiber is resumed per subscriber. A subscriber whose socket is full holds at
 * most one pending stat per wallet it follows (newest wins) until `drain`, so a
 * slow reader costs a bounded amount of memory and, when it catches up, sees
 * current values. One shared ticker sends a heartbeat (an SSE comment line) to
 * every subscriber idle for an interval. A subscriber leaves the hub
 * synchronously when its client goes (the response's `close`, or the client
 * ending its side of the connection, after which node ends it too). On the service's
 * node server a stream holds no fiber at all (`attach`, from the node-level route in
 * `Http.ts`); at shutdown the hub ends every stream (`endAll`). Who follows it, and the
 * frame a changed stat becomes: `HubSubscribers.ts`.
 */
import { Config, Context, Duration, Effect, Layer, Option, Result, Schedule, type Scope } from "effect"
import { BadRequest, ServiceUnavailable } from "../api/Errors.ts"
import type { Address } from "../domain/Primitives.ts"
import type { Agent, AgentStat } from "./Domain.ts"
import {
  type Batch,
  LocalSubscriber,
  type StatFrame,
  statFrame,
  type Subscriber,
  type Subscription,
  utf8,
  type WalletFilter
} from "./HubSubscribers.ts"
import { MarketplaceUpstream } from "./MarketplaceUpstream.ts"
import { joinFrames, type SseResponse, SseSubscriber } from "./SseFanout.ts"
import { isAddress, toAgentStat } from "./UpstreamMapping.ts"

export type { Batch, Subscription, WalletFilter }

export interface StatsHubConfig {
  readonly pollInterval: Duration.Duration
  readonly heartbeatInterval: Duration.Duration
  /** How many top agents "all" (no `wallets`) follows. */
  readonly leaderboardSize: number
  /** Most wallets one subscription may name. */
  readonly maxWalletsPerSubscriber: number
  /** Most distinct wallets outside the leaderboard polled per cycle (bounds upstream requests). */
  readonly maxExtraWallets: number
  readonly maxSubscribers: number
}

export const StatsHubConfig: Config.Config<StatsHubConfig> = Config.all({
  pollInterval: Config.Duration("MARKETPLACE_STREAM_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(5))),
  heartbeatInterval: Config.Duration("MARKETPLACE_STREAM_HEARTBEAT").pipe(Config.withDefault(Duration.seconds(15))),
  leaderboardSize: Config.Int("MARKETPLACE_STREAM_LEADERBOARD_SIZE").pipe(Config.withDefault(100)),
  maxWalletsPerSubscriber: Config.Int("MARKETPLACE_STREAM_MAX_WALLETS").pipe(Config.withDefault(50)),
  maxExtraWallets: Config.Int("MARKETPLACE_STREAM_MAX_EXTRA_WALLETS").pipe(Config.withDefault(200)),
  maxSubscribers: Config.Int("MARKETPLACE_STREAM_MAX_SUBSCRIBERS").pipe(Config.withDefault(20_000))
}).pipe(
  Config.map((c) => ({
    ...c,
    leaderboardSize: Math.max(1, Math.min(c.leaderboardSize, 100)),
    maxWalletsPerSubscriber: Math.max(1, c.maxWalletsPerSubscriber),
    maxExtraWallets: Math.max(0, c.maxExtraWallets),
    maxSubscribers: Math.max(1, c.maxSubscribers)
  }))
)

export interface HubStats {
  readonly subscribers: number
  readonly polls: number
  readonly watchedWallets: number
  /** SSE subscribers whose socket is full (waiting for `drain`), and the stats held back for them. */
  readonly behind: number
  readonly heldBack: number
  /** Bytes written to SSE sockets that the kernel has not taken yet (all subscribers). */
  readonly bufferedBytes: number
  /** When the last subscriber left (ms since the epoch, sub-millisecond); benchmarks time cleanup with it. */
  readonly emptiedAt: number | undefined
  /** When the last poll's changes had been written to every subscriber (same clock). */
  readonly deliveredAt: number | undefined
}

export class StatsHub extends Context.Service<StatsHub, {
  /** Validates the `wallets` query (comma-separated addresses; absent or empty = all leaderboard agents). */
  parseFilter(wallets: string | undefined): Effect.Effect<WalletFilter, BadRequest>
  /** The same validation as plain code (the node-level route). */
  filterOf(wallets: string | undefined): Result.Result<WalletFilter, BadRequest>
  /** Fails when the hub is at capacity (checked before a response starts). */
  readonly admit: Effect.Effect<void, ServiceUnavailable>
  /** Joins the hub for the life of the scope, read through `take` (in-process: tests, benchmarks). */
  subscribe(filter: WalletFilter): Effect.Effect<Subscription, ServiceUnavailable, Scope.Scope>
  /**
   * Serves one SSE client on its node response: writes the head, `: connected`, `retry`
   * and the snapshot, joins the fan-out, and completes when the response closes. Fails
   * (before anything is written) when the hub is at capacity.
   */
  serve(filter: WalletFilter, res: SseResponse): Effect.Effect<void, ServiceUnavailable>
  /** `serve` as plain code, returning at once (node-level route): false, nothing written, at capacity. */
  attach(filter: WalletFilter, res: SseResponse): boolean
  /** Ends every SSE response (shutdown): each client sees the end of its stream. */
  endAll(): void
  readonly stats: Effect.Effect<HubStats>
  /** Runs one poll cycle now (tests, benchmarks); the shared poller calls the same. */
  readonly pollNow: Effect.Effect<void>
}>()("das/marketplace/StatsHub") {}

const sameStat = (a: AgentStat, b: AgentStat) =>
  a.successRate === b.successRate && a.totalJobs === b.totalJobs && a.rating === b.rating &&
  a.pricePerJobUsd === b.pricePerJobUsd && a.totalVolumeUsd === b.totalVolumeUsd

const capacityError = () => new ServiceUnavailable({ message: "The stats stream is at capacity; retry shortly." })

export const make = Effect.fn("StatsHub.make")(function*(config: StatsHubConfig) {
  const upstream = yield* MarketplaceUpstream
  const subscribers = new Set<Subscriber>()
  const allSubscribers = new Set<Subscriber>()
  const byWallet = new Map<string, Set<Subscriber>>()
  const sockets = new Set<SseSubscriber<WalletFilter>>()
  const latest = new Map<string, AgentStat>()
  let leaderboard = new Set<string>()
  let polls = 0
  let emptiedAt: number | undefined
  let deliveredAt: number | undefined

  /**
   * One poll's changes to every subscriber, synchronously: the leaderboard frames are
   * joined once and those same bytes go to every "all" subscriber; a named subscriber
   * gets its wallets' frames (shared bytes when one, joined for it when several).
   */
  const deliver = (changed: ReadonlyArray<StatFrame>) => {
    const inLeaderboard = changed.filter((f) => leaderboard.has(f.key))
    if (inLeaderboard.length > 0 && allSubscribers.size > 0) {
      const joined = joinFrames(inLeaderboard)
      for (const s of allSubscribers) s.send(inLeaderboard, joined)
    }
    if (byWallet.size === 0) return
    if (changed.length === 1) {
      const f = changed[0]!
      const named = byWallet.get(f.key)
      if (named !== undefined) for (const s of named) s.send(changed, f.wire)
      return
    }
    const perSubscriber = new Map<Subscriber, Array<StatFrame>>()
    for (const f of changed) {
      const named = byWallet.get(f.key)
      if (named === undefined) continue
      for (const s of named) {
        const frames = perSubscriber.get(s)
        if (frames === undefined) perSubscriber.set(s, [f])
        else frames.push(f)
      }
    }
    for (const [s, frames] of perSubscriber) s.send(frames, joinFrames(frames))
  }

  const pollOnce: Effect.Effect<void> = Effect.gen(function*() {
    if (subscribers.size === 0) return
    polls++
    const asOf = new Date().toISOString()
    const fresh = new Map<string, Agent>()
    const top = yield* Effect.option(upstream.leaderboard({ start: 0, limit: config.leaderboardSize }))
    if (Option.isSome(top)) {
      leaderboard = new Set(top.value.agents.map((a) => a.walletAddress.toLowerCase()))
      for (const a of top.value.agents) fresh.set(a.walletAddress.toLowerCase(), a)
    }
    const extra = [...byWallet.keys()].filter((w) => !fresh.has(w)).slice(0, config.maxExtraWallets)
    const found = yield* Effect.forEach(
      extra,
      (w) => Effect.option(upstream.agentByWallet(w as Address)),
      { concurrency: 8 }
    )
    for (const a of found) if (Option.isSome(a) && Option.isSome(a.value)) {
      fresh.set(a.value.value.walletAddress.toLowerCase(), a.value.value)
    }
    const changed: Array<StatFrame> = []
    for (const [key, agent] of fresh) {
      const stat = toAgentStat(agent, asOf)
      const prev = latest.get(key)
      if (prev !== undefined && sameStat(prev, stat)) continue
      latest.set(key, stat)
      changed.push(statFrame(key, stat))
    }
    if (changed.length > 0) {
      deliver(changed)
      deliveredAt = performance.timeOrigin + performance.now()
    }
    // Forget what nobody follows any more, so the cache stays bounded too.
    for (const key of latest.keys()) if (!leaderboard.has(key) && !byWallet.has(key)) latest.delete(key)
    if (Option.isNone(top)) yield* Effect.logWarning("marketplace stats poll: leaderboard unavailable")
  }).pipe(Effect.withSpan("StatsHub.poll"))

  const heartbeat = Effect.sync(() => {
    for (const s of subscribers) s.beat()
  })

  yield* Effect.forkScoped(Effect.repeat(pollOnce, Schedule.spaced(config.pollInterval)))
  yield* Effect.forkScoped(
    Effect.repeat(Effect.delay(heartbeat, config.heartbeatInterval), Schedule.forever)
  )
  const endAll = () => [...sockets].forEach((s) => s.end())
  // On shutdown, end the responses still open (the node server asks first, when it starts closing).
  yield* Effect.addFinalizer(() => Effect.sync(endAll))

  const filterOf = (wallets: string | undefined): Result.Result<WalletFilter, BadRequest> => {
    if (wallets === undefined || wallets.trim() === "") return Result.succeed({ _tag: "All" })
    const parts = [...new Set(wallets.split(",").map((w) => w.trim()).filter((w) => w !== ""))]
    if (parts.some((w) => !isAddress(w))) {
      return Result.fail(new BadRequest({ message: `\`wallets\` holds a value that is not an address.` }))
    }
    if (parts.length > config.maxWalletsPerSubscriber) {
      return Result.fail(new BadRequest({ message: `\`wallets\` may name at most ${config.maxWalletsPerSubscriber} wallets.` }))
    }
    return Result.succeed({ _tag: "Wallets", wallets: parts as ReadonlyArray<Address> })
  }

  const parseFilter = Effect.fn("StatsHub.parseFilter")(function*(wallets: string | undefined) {
    return yield* Effect.fromResult(filterOf(wallets))
  })

  const full = () => subscribers.size >= config.maxSubscribers

  const admit = Effect.suspend(() => (full() ? Effect.fail(capacityError()) : Effect.void))

  const add = (s: Subscriber) => {
    subscribers.add(s)
    if (s.filter._tag === "All") allSubscribers.add(s)
    else {
      for (const w of s.filter.wallets) {
        const key = w.toLowerCase()
        let set = byWallet.get(key)
        if (set === undefined) byWallet.set(key, set = new Set())
        set.add(s)
      }
    }
  }

  const remove = (s: Subscriber) => {
    if (!subscribers.delete(s)) return
    if (subscribers.size === 0) emptiedAt = performance.timeOrigin + performance.now()
    allSubscribers.delete(s)
    if (s.filter._tag === "Wallets") {
      for (const w of s.filter.wallets) {
        const key = w.toLowerCase()
        const set = byWallet.get(key)
        if (set !== undefined) {
          set.delete(s)
          if (set.size === 0) byWallet.delete(key)
        }
      }
    }
  }

  const snapshotOf = (filter: WalletFilter): ReadonlyArray<AgentStat> => {
    if (filter._tag === "All") return [...leaderboard].flatMap((w) => latest.get(w) ?? [])
    return filter.wallets.flatMap((w) => latest.get(w.toLowerCase()) ?? [])
  }

  /** In-process subscriber (tests, benchmarks): pending frames read through `take`. */
  const subscribe = Effect.fn("StatsHub.subscribe")(function*(filter: WalletFilter) {
    const s = new LocalSubscriber(filter)
    yield* Effect.acquireRelease(
      Effect.suspend(() => (full() ? Effect.fail(capacityError()) : Effect.sync(() => add(s)))),
      () => Effect.sync(() => remove(s))
    )
    const take = Effect.callback<Batch>((resume) => {
      if (s.due) return resume(Effect.succeed(s.drain()))
      s.wake = () => resume(Effect.sync(() => s.drain()))
      return Effect.sync(() => {
        s.wake = undefined
      })
    })
    return { take, snapshot: snapshotOf(filter) } satisfies Subscription
  })

  const forget = (s: SseSubscriber<WalletFilter>) => {
    remove(s)
    sockets.delete(s)
  }

  /** Resumes when the response closes (client gone, or ended at shutdown). */
  const closed = (res: SseResponse) =>
    Effect.callback<void>((resume) => {
      if (res.destroyed) return resume(Effect.void)
      const done = () => resume(Effect.void)
      res.on("close", done)
      return Effect.sync(() => {
        res.off("close", done)
      })
    })

  // Registering, the head and the snapshot happen in one synchronous step, so no poll can
  // fall between the snapshot and the first change. No fiber works for this subscriber
  // afterwards: the poller writes to `res`, and the client going removes it at once.
  const attach = (filter: WalletFilter, res: SseResponse): boolean => {
    if (res.destroyed) return true
    if (full()) return false
    const s = new SseSubscriber(filter, res, forget)
    add(s)
    sockets.add(s)
    let first = ": connected\nretry: 5000\n\n"
    for (const stat of snapshotOf(filter)) first += `data: ${JSON.stringify(stat)}\n\n`
    s.start(utf8.encode(first))
    return true
  }

  const serve = (filter: WalletFilter, res: SseResponse): Effect.Effect<void, ServiceUnavailable> =>
    Effect.suspend(() => (attach(filter, res) ? closed(res) : Effect.fail(capacityError())))

  return StatsHub.of({
    parseFilter,
    filterOf,
    admit,
    subscribe,
    serve,
    attach,
    endAll,
    stats: Effect.sync(() => {
      let behind = 0
      let heldBack = 0
      let bufferedBytes = 0
      for (const s of sockets) {
        if (s.isBehind) behind++
        heldBack += s.pendingCount
        bufferedBytes += s.buffered
      }
      return { subscribers: subscribers.size, polls, watchedWallets: byWallet.size, behind, heldBack, bufferedBytes, emptiedAt, deliveredAt }
    }),
    pollNow: pollOnce
  })
})

/** Requires `MarketplaceUpstream`; reads the `MARKETPLACE_STREAM_*` keys. Owns the poller and heartbeat fibers. */
export const StatsHubLive: Layer.Layer<StatsHub, Config.ConfigError, MarketplaceUpstream> = Layer.effect(
  StatsHub,
  Effect.gen(function*() {
    return yield* make(yield* StatsHubConfig)
  })
)
