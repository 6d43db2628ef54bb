/**
 * The live agent stats stream (`GET /marketplace/agents/stream`).
 *
 * The upstream has no stream, so ONE shared poller reads agent metrics every
 * poll interval, whatever the number of subscribers (one leaderboard request,
 * plus one request per explicitly subscribed wallet outside it, deduplicated
 * across all subscribers), and pushes a stat only when it changed. It does not
 * poll at all while nobody listens.
 *
 * Each subscriber holds at most one pending stat per wallet it follows: a newer
 * stat replaces an unsent older one (coalesce to latest), so a slow reader costs
 * a bounded amount of memory and, when it catches up, sees current values. One
 * shared ticker marks every subscriber for a heartbeat (an SSE comment line).
 * A subscriber leaves the hub as soon as its stream ends or is interrupted
 * (client disconnect).
 */
import { Config, Context, Duration, Effect, Layer, Option, Schedule, Scope, Stream } from "effect"
import { BadRequest, ServiceUnavailable } from "../api/Errors.ts"
import type { Address } from "../domain/Primitives.ts"
import type { Agent, AgentStat } from "./Domain.ts"
import { MarketplaceUpstream } from "./MarketplaceUpstream.ts"
import { isAddress, toAgentStat } from "./UpstreamMapping.ts"

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

/** Which wallets a subscription follows: every leaderboard agent, or the named ones. */
export type WalletFilter = { readonly _tag: "All" } | { readonly _tag: "Wallets"; readonly wallets: ReadonlyArray<Address> }

/** A stat as it goes on the wire: encoded once, the same bytes written to every subscriber. */
interface Frame {
  readonly stat: AgentStat
  readonly bytes: Uint8Array
}

interface Subscriber {
  readonly filter: WalletFilter
  /** At most one unsent frame per wallet (coalesced to the latest). */
  readonly pending: Map<string, Frame>
  heartbeat: boolean
  wake: (() => void) | undefined
}

/** What one read of a subscription yields: stats to send, and whether a heartbeat is due. */
export interface Batch {
  readonly stats: ReadonlyArray<AgentStat>
  readonly heartbeat: boolean
}

export interface Subscription {
  /** Waits until something is due, then drains it. */
  readonly take: Effect.Effect<Batch>
  /** Latest known stats for the followed wallets, at subscribe time. */
  readonly snapshot: ReadonlyArray<AgentStat>
}

export interface HubStats {
  readonly subscribers: number
  readonly polls: number
  readonly watchedWallets: number
}

export class StatsHub extends Context.Service<StatsHub, {
  /** Validates the `wallets` query (comma-separated addresses; absent or empty = all leaderboard agents). */
  parseFilter(wallets: string | undefined): Effect.Effect<WalletFilter, BadRequest>
  /** Fails when the hub is at capacity (checked before a response starts). */
  readonly admit: Effect.Effect<void, ServiceUnavailable>
  /** Joins the hub for the life of the scope. */
  subscribe(filter: WalletFilter): Effect.Effect<Subscription, ServiceUnavailable, Scope.Scope>
  /** The SSE body for one client: a comment, the snapshot, then changes and heartbeats until it goes away. */
  sse(filter: WalletFilter): Stream.Stream<Uint8Array, ServiceUnavailable>
  readonly stats: Effect.Effect<HubStats>
  /** Runs one poll cycle now (tests, benchmarks); the shared poller calls the same. */
  readonly pollNow: Effect.Effect<void>
}>()("das/marketplace/StatsHub") {}

const sameStat = (a: AgentStat, b: AgentStat) =>
  a.successRate === b.successRate && a.totalJobs === b.totalJobs && a.rating === b.rating &&
  a.pricePerJobUsd === b.pricePerJobUsd && a.totalVolumeUsd === b.totalVolumeUsd

/** SSE framing: `data:` events (no event name, as `HttpApiSchema.StreamSse({ data })` reads them). */
const utf8 = new TextEncoder()
const statFrame = (stat: AgentStat): Frame => ({ stat, bytes: utf8.encode(`data: ${JSON.stringify(stat)}\n\n`) })
const heartbeatBytes = utf8.encode(": heartbeat\n\n")

export const renderBatch = (batch: Batch): string => {
  let out = ""
  for (const s of batch.stats) out += `data: ${JSON.stringify(s)}\n\n`
  if (batch.heartbeat && out === "") out = ": heartbeat\n\n"
  return out
}

export const make = Effect.fn("StatsHub.make")(function*(config: StatsHubConfig) {
  const upstream = yield* MarketplaceUpstream
  const subscribers = new Set<Subscriber>()
  const allSubscribers = new Set<Subscriber>()
  const byWallet = new Map<string, Set<Subscriber>>()
  const latest = new Map<string, AgentStat>()
  let leaderboard = new Set<string>()
  let polls = 0

  const wakeUp = (s: Subscriber) => {
    const w = s.wake
    if (w !== undefined) {
      s.wake = undefined
      w()
    }
  }

  const deliver = (stat: AgentStat, inLeaderboard: boolean) => {
    const key = stat.walletAddress.toLowerCase()
    const frame = statFrame(stat)
    const push = (s: Subscriber) => {
      s.pending.set(key, frame)
      wakeUp(s)
    }
    if (inLeaderboard) for (const s of allSubscribers) push(s)
    const named = byWallet.get(key)
    if (named !== undefined) for (const s of named) if (s.filter._tag === "Wallets") push(s)
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
    for (const [key, agent] of fresh) {
      const stat = toAgentStat(agent, asOf)
      const prev = latest.get(key)
      if (prev !== undefined && sameStat(prev, stat)) continue
      latest.set(key, stat)
      deliver(stat, leaderboard.has(key))
    }
    // Forget what nobody follows any more, so the cache stays bounded too.
    for (const key of latest.keys()) if (!leaderboard.has(key) && !byWallet.has(key)) latest.delete(key)
    if (Option.isNone(top)) yield* Effect.logWarning("marketplace stats poll: leaderboard unavailable")
  }).pipe(Effect.withSpan("StatsHub.poll"))

  const heartbeat = Effect.sync(() => {
    for (const s of subscribers) {
      s.heartbeat = true
      wakeUp(s)
    }
  })

  yield* Effect.forkScoped(Effect.repeat(pollOnce, Schedule.spaced(config.pollInterval)))
  yield* Effect.forkScoped(
    Effect.repeat(Effect.delay(heartbeat, config.heartbeatInterval), Schedule.forever)
  )

  const parseFilter = Effect.fn("StatsHub.parseFilter")(function*(wallets: string | undefined) {
    if (wallets === undefined || wallets.trim() === "") return { _tag: "All" } as WalletFilter
    const parts = [...new Set(wallets.split(",").map((w) => w.trim()).filter((w) => w !== ""))]
    const bad = parts.find((w) => !isAddress(w))
    if (bad !== undefined) return yield* new BadRequest({ message: `\`wallets\` holds a value that is not an address.` })
    if (parts.length > config.maxWalletsPerSubscriber) {
      return yield* new BadRequest({ message: `\`wallets\` may name at most ${config.maxWalletsPerSubscriber} wallets.` })
    }
    return { _tag: "Wallets", wallets: parts as ReadonlyArray<Address> } as WalletFilter
  })

  const admit = Effect.suspend(() =>
    subscribers.size >= config.maxSubscribers
      ? Effect.fail(new ServiceUnavailable({ message: "The stats stream is at capacity; retry shortly." }))
      : Effect.void
  )

  const register = (filter: WalletFilter) =>
    Effect.suspend(() => {
      if (subscribers.size >= config.maxSubscribers) {
        return Effect.fail(new ServiceUnavailable({ message: "The stats stream is at capacity; retry shortly." }))
      }
      const s: Subscriber = { filter, pending: new Map(), heartbeat: false, wake: undefined }
      subscribers.add(s)
      if (filter._tag === "All") allSubscribers.add(s)
      else {
        for (const w of filter.wallets) {
          const key = w.toLowerCase()
          let set = byWallet.get(key)
          if (set === undefined) byWallet.set(key, set = new Set())
          set.add(s)
        }
      }
      return Effect.succeed(s)
    })

  const unregister = (s: Subscriber) =>
    Effect.sync(() => {
      subscribers.delete(s)
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
      s.pending.clear()
      s.wake = undefined
    })

  /** Everything due for `s`, as the frames' own bytes (no copy); empties its pending set. */
  const drainFrames = (s: Subscriber): ReadonlyArray<Uint8Array> => {
    const out: Array<Uint8Array> = []
    for (const f of s.pending.values()) out.push(f.bytes)
    if (s.heartbeat && out.length === 0) out.push(heartbeatBytes)
    s.pending.clear()
    s.heartbeat = false
    return out
  }

  /** One frame is written as is (the shared bytes); several are joined for this subscriber. */
  const joinFrames = (frames: ReadonlyArray<Uint8Array>): Uint8Array =>
    frames.length === 1 ? frames[0]! : Buffer.concat(frames)

  const drain = (s: Subscriber): Batch => {
    const batch = { stats: [...s.pending.values()].map((f) => f.stat), heartbeat: s.heartbeat }
    s.pending.clear()
    s.heartbeat = false
    return batch
  }

  const waitFor = <A>(s: Subscriber, read: (s: Subscriber) => A): Effect.Effect<A> =>
    Effect.callback<A>((resume) => {
      if (s.pending.size > 0 || s.heartbeat) return resume(Effect.succeed(read(s)))
      s.wake = () => resume(Effect.sync(() => read(s)))
      return Effect.sync(() => {
        s.wake = undefined
      })
    })

  const take = (s: Subscriber): Effect.Effect<Batch> => waitFor(s, drain)

  const snapshotOf = (filter: WalletFilter): ReadonlyArray<AgentStat> => {
    if (filter._tag === "All") return [...leaderboard].flatMap((w) => latest.get(w) ?? [])
    return filter.wallets.flatMap((w) => latest.get(w.toLowerCase()) ?? [])
  }

  const subscribe = Effect.fn("StatsHub.subscribe")(function*(filter: WalletFilter) {
    const s = yield* Effect.acquireRelease(register(filter), unregister)
    return { take: take(s), snapshot: snapshotOf(filter) } satisfies Subscription
  })

  // Each change is encoded once (in `deliver`) and the same bytes are written to every
  // subscriber's socket; only the per-client snapshot at connect is rendered per client.
  const sse = (filter: WalletFilter): Stream.Stream<Uint8Array, ServiceUnavailable> =>
    Stream.unwrap(
      Effect.map(Effect.acquireRelease(register(filter), unregister), (s) =>
        Stream.concat(
          Stream.make(utf8.encode(`: connected\nretry: 5000\n\n${renderBatch({ stats: snapshotOf(filter), heartbeat: false })}`)),
          Stream.fromEffectRepeat(Effect.map(waitFor(s, drainFrames), joinFrames))
        ))
    )

  return StatsHub.of({
    parseFilter,
    admit,
    subscribe,
    sse,
    stats: Effect.sync(() => ({ subscribers: subscribers.size, polls, watchedWallets: byWallet.size })),
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
