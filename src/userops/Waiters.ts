/**
 * Receipts pushed (docs/relay.md, "Waiting for the outcome"): `GET /userops/{id}?wait=30s`
 * answers as soon as the operation is `included` or `failed`, or its current state when the
 * wait is over.
 *
 * - Woken by the settlement itself: a trigger announces every settlement on channel
 *   `das_userops` at COMMIT (migration 0340), heard by ONE listener connection per process,
 *   so a settlement by any process (this one, another replica, the follower, the reconciler)
 *   wakes every waiter of that operation on every process. A waiter re-reads the row; if the
 *   listener's connection is lost, every waiter is woken to re-read, and the listener reconnects.
 *   A settlement this process commits in a transaction of its own (its chain watcher's, the
 *   relay's, the reconciler's) hands its waiters the row as committed right after the commit
 *   (`Relay.onSettled`): no NOTIFY round trip, no re-read.
 * - Something must settle it quickly: while this process has operations it relayed in the last
 *   `USEROPS_WATCH_FOR` or someone waits on, each chain with such operations is watched
 *   (`eth_blockNumber` every `USEROPS_WATCH_INTERVAL`, or at once on each new head the node
 *   pushes when the chain has a `wsUrl`; on a new block, the EntryPoint's
 *   `UserOperationEvent`s of the new blocks); an operation of ours seen there is settled from
 *   the chain as the follower would (`Relay.observe`). Nothing watched, no calls.
 * - Bounded: at most `USEROPS_WAIT_MAX_WAITERS` waiters in the process, each signer and each
 *   client address a share (429 beyond it, 503 at capacity). A waiter leaves when it answers or
 *   when its client goes away (the request is interrupted): nothing stays behind.
 */
import { PgClient } from "@effect/sql-pg"
import { Cause, Config, Context, Duration, Effect, Fiber, Layer, Option, Queue, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Log } from "viem"
import { BadRequest, type NotFound, ServiceUnavailable, TooManyRequests } from "../api/Errors.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { followHeads, type Head } from "../chain/Heads.ts"
import { inclusionsOfEvents, receiptFrom, userOperationEvents, userOperationEventsAt } from "../chain/Inclusions.ts"
import type { UserOpReceipt } from "../domain/Operations.ts"
import { Lifecycle } from "../platform/Lifecycle.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import { withMetrics } from "../platform/Metrics.ts"
import { makeSignal, type Signal } from "../platform/Signal.ts"
import { OperationRow, toReceipt } from "./OperationRow.ts"
import { Relay } from "./Relay.ts"

export const CHANNEL = "das_userops"

export interface WaitConfig {
  /** The longest wait granted; a longer `wait` is shortened to it. */
  readonly maxWait: Duration.Duration
  readonly maxWaiters: number
  readonly maxPerSigner: number
  readonly maxPerAddress: number
  /** How often a watched chain's head is read (0: not watched). */
  readonly watchInterval: Duration.Duration
  /** How long an operation relayed here is watched on chain without anyone waiting on it. */
  readonly watchFor: Duration.Duration
}

export const WaitConfig: Config.Config<WaitConfig> = Config.all({
  maxWait: Config.Duration("USEROPS_WAIT_MAX").pipe(Config.withDefault(Duration.seconds(30))),
  maxWaiters: Config.Int("USEROPS_WAIT_MAX_WAITERS").pipe(Config.withDefault(10_000)),
  maxPerSigner: Config.Int("USEROPS_WAIT_MAX_PER_SIGNER").pipe(Config.withDefault(32)),
  maxPerAddress: Config.Int("USEROPS_WAIT_MAX_PER_ADDRESS").pipe(Config.withDefault(1_000)),
  watchInterval: Config.Duration("USEROPS_WATCH_INTERVAL").pipe(Config.withDefault(Duration.millis(20))),
  watchFor: Config.Duration("USEROPS_WATCH_FOR").pipe(Config.withDefault(Duration.minutes(2)))
}).pipe(Config.map((c) => {
  const maxWaiters = Math.max(1, c.maxWaiters)
  const share = (n: number) => (n <= 0 ? maxWaiters : Math.min(n, maxWaiters))
  return { ...c, maxWaiters, maxPerSigner: share(c.maxPerSigner), maxPerAddress: share(c.maxPerAddress) }
}))

/** How often a chain whose new heads are pushed is read anyway (a subscription may stall unnoticed): at least every second. */
const PUSHED_POLL = Duration.seconds(1)

/** `wait`: whole seconds (`30`, `30s`) or milliseconds (`500ms`); at most 6 digits. */
const WAIT = /^(\d{1,6})(ms|s)?$/

interface Waiter {
  readonly signer: string
  readonly address: string | undefined
  readonly signal: Signal
  /** The row as this process's settlement committed it (set before `signal` fires). */
  settled: OperationRow | undefined
}

interface Watched {
  readonly id: string
  readonly chainId: number
  readonly hash: string
  readonly waiters: Set<Waiter>
  /** Watched without waiters until then (ms since the epoch): relayed here. */
  until: number
}

export interface WaitStats {
  readonly waiters: number
  /** Operations watched on chain (waited on, or relayed here recently). */
  readonly watched: number
}

export class ReceiptWaiters extends Context.Service<ReceiptWaiters, {
  /** The `wait` query value in milliseconds (`undefined`: not given), shortened to the maximum; 400 naming `wait` when malformed. */
  parseWait(value: string | undefined): Effect.Effect<number | undefined, BadRequest>
  /** `Relay.get`, waiting up to `waitMs` for a terminal status. */
  get(
    signer: string,
    userOpId: string,
    waitMs: number | undefined,
    clientAddress: string | undefined
  ): Effect.Effect<UserOpReceipt, NotFound | TooManyRequests | ServiceUnavailable>
  /** An operation this process just relayed: watched on its chain for `USEROPS_WATCH_FOR`, so it settles as soon as it is included. */
  watch(receipt: UserOpReceipt): Effect.Effect<void>
  readonly stats: Effect.Effect<WaitStats>
}>()("das/userops/ReceiptWaiters") {
  static readonly layer = Layer.effect(ReceiptWaiters, Effect.suspend(() => make))
}

const isTerminal = (status: string) => status === "included" || status === "failed"

const make = Effect.gen(function*() {
  const config = yield* WaitConfig
  const relay = yield* Relay
  const chains = yield* Chains
  const sql = yield* SqlClient.SqlClient
  const pg = yield* PgClient.PgClient
  const maxWaitMs = Duration.toMillis(config.maxWait)
  // Shutdown: waiting requests answer at once (their clients ask again, elsewhere).
  const lifecycle = yield* Effect.serviceOption(Lifecycle)
  const stopping = Option.isSome(lifecycle) ? lifecycle.value.whenDraining : Effect.never
  const watchForMs = Duration.toMillis(config.watchFor)
  const pushedPoll = Duration.max(PUSHED_POLL, config.watchInterval)

  const watched = new Map<string, Watched>()
  /** Per chain: hash → watched operation, and the chain watcher's wake-up. */
  const byChain = new Map<number, Map<string, Watched>>()
  const chainSignal = new Map<number, Signal>()
  const bySigner = new Map<string, number>()
  const byAddress = new Map<string, number>()
  let waiters = 0

  const count = (m: Map<string, number>, key: string, by: number) => {
    const n = (m.get(key) ?? 0) + by
    if (n <= 0) m.delete(key)
    else m.set(key, n)
  }

  const forget = (w: Watched) => {
    watched.delete(w.id)
    byChain.get(w.chainId)?.delete(w.hash)
  }

  const track = (id: string, chainId: number, hash: string): Watched => {
    let w = watched.get(id)
    if (w === undefined) {
      w = { id, chainId, hash: hash.toLowerCase(), waiters: new Set(), until: 0 }
      watched.set(id, w)
      let m = byChain.get(chainId)
      if (m === undefined) byChain.set(chainId, m = new Map())
      m.set(w.hash, w)
    }
    return w
  }
  // After the caller has set the operation up: the watcher may run at once, inside `fire`.
  const wakeWatcher = (chainId: number) => chainSignal.get(chainId)?.fire()

  /** A settlement was committed (or may have been missed: `undefined`): its waiters re-read. */
  const settled = (id: string | undefined, row?: OperationRow) => {
    if (id === undefined) {
      for (const w of watched.values()) for (const waiter of w.waiters) waiter.signal.fire()
      return
    }
    const w = watched.get(id)
    if (w === undefined) return
    forget(w)
    for (const waiter of w.waiters) {
      if (row !== undefined) waiter.settled = row
      waiter.signal.fire()
    }
  }
  // In this process, right after the settlement's commit: the row itself.
  yield* relay.onSettled((row) => settled(row.id, row))

  // The listener: one connection, for the life of the process; a lost one wakes every waiter.
  const health = makeLoopHealth("user operation listener")
  const listenOnce = Effect.scoped(Effect.gen(function*() {
    const queue = yield* pg.listen(CHANNEL)
    yield* health.succeeded
    // Settlements committed while it was not listening are found by re-reading.
    settled(undefined)
    while (true) {
      const batch = yield* Queue.takeAll(queue)
      for (const n of batch) settled(n.payload)
    }
  }))
  yield* Effect.forkScoped(listenOnce.pipe(
    Effect.tapCause((cause) => health.failed(cause, "user operation listener lost; reconnecting")),
    Effect.retry(Schedule.spaced(Duration.seconds(1)))
  ))

  /**
   * One chain's watcher: while operations of ours are watched on it, reads its head every
   * `watchInterval` and, on new blocks, the EntryPoint's events in them; ours are settled from
   * the chain. The watched set is read after the events: an operation added meanwhile checks
   * the bundler itself once registered (`get`), so a block is never missed by both.
   */
  const watchChain = (net: ChainNetwork) =>
    Effect.gen(function*() {
      const signal = makeSignal()
      chainSignal.set(net.chainId, signal)
      const client = net.chain.client
      const entryPoint = net.network.entryPoint
      // A chain that cannot be read is said once (not every 20 ms) and read again every second.
      let down = false
      let last: bigint | undefined
      /** The newest head pushed and not yet read (see `pushed` below). */
      let pushedHead: Head | undefined
      /** The pushed block that follows the last one read: its events by its hash (no head read); undefined otherwise, or when the node cannot say. */
      const eventsOfPushed = Effect.suspend(() => {
        const next = pushedHead
        pushedHead = undefined
        if (next === undefined || last === undefined || next.number !== last + 1n) return Effect.succeed(undefined)
        return Effect.tryPromise(() => userOperationEventsAt(client, entryPoint, next.hash)).pipe(
          Effect.map((events) => ({ head: next.number, events })),
          // The RPC node behind the push, say: read the range as a polled pass does.
          Effect.orElseSucceed(() => undefined)
        )
      })
      const eventsOfRange = Effect.gen(function*() {
        const head = yield* Effect.tryPromise(() => client.getBlockNumber({ cacheTime: 0 }))
        // After an idle spell (or a slow RPC), the last 64 blocks at most: the follower reads the rest.
        const from = last === undefined || head - last > 64n ? (head > 63n ? head - 63n : 0n) : last + 1n
        if (from > head) return undefined
        return { head, events: yield* Effect.tryPromise(() => userOperationEvents(client, entryPoint, from, head)) }
      })
      const pass = Effect.gen(function*() {
        const read = (yield* eventsOfPushed) ?? (yield* eventsOfRange)
        if (read === undefined) return
        const { head, events } = read
        last = head
        const mine = byChain.get(net.chainId)
        const ours: Array<Log> = events.filter((e) => mine?.has((e.topics[1] ?? "").toLowerCase()) === true)
        if (ours.length === 0) return
        const inclusions = yield* Effect.tryPromise(() => inclusionsOfEvents(receiptFrom(client), entryPoint, ours))
        yield* Effect.forEach(inclusions, (inclusion) => relay.observe(net.chainId, inclusion), { discard: true })
      })
      // New heads pushed (the chain's `wsUrl`), while something is watched: each wakes a pass at
      // once. The pass reads what the block holds over the RPC (the block right after the last
      // one read: by its hash, without reading the head; any other: as a polled pass does), and
      // the poll goes on (every second, or `USEROPS_WATCH_INTERVAL` if longer) in case a
      // subscription stalls unnoticed.
      const wsUrl = net.network.wsUrl
      let pushed = false
      // Its own wake-up: a newly watched operation (`signal`) does not cut the poll's wait short,
      // or a busy relay would read the head once per submission.
      const headPushed = makeSignal()
      let headsDown = false
      let heads: Fiber.Fiber<never> | undefined
      const followHeadsLoop = (url: string) =>
        Effect.gen(function*() {
          while (true) {
            const lost = yield* Effect.flip(followHeads(url, (head) => {
              pushedHead = head
              headPushed.fire()
            }, () => {
              // Subscribed: a block made before it is not pushed, so read at once.
              pushed = true
              headPushed.fire()
            }))
            pushed = false
            if (!headsDown) yield* Effect.logWarning(`user operation watcher on ${net.name}: new heads are not pushed (${lost.message}); polling every ${Duration.format(config.watchInterval)}`)
            headsDown = true
            yield* Effect.sleep(Duration.seconds(1))
          }
        })
      const scope = yield* Effect.scope
      while (true) {
        const now = Date.now()
        const mine = byChain.get(net.chainId)
        if (mine !== undefined) {
          for (const w of mine.values()) if (w.waiters.size === 0 && w.until < now) forget(w)
        }
        if (mine === undefined || mine.size === 0) {
          // Nothing watched: no subscription either.
          if (heads !== undefined) {
            yield* Fiber.interrupt(heads)
            heads = undefined
            pushed = false
          }
          yield* signal.wait
          continue
        }
        if (wsUrl !== undefined && heads === undefined) heads = yield* Effect.forkIn(followHeadsLoop(wsUrl), scope)
        if (pushed && headsDown) {
          headsDown = false
          yield* Effect.logInfo(`user operation watcher on ${net.name}: new heads pushed again`)
        }
        const failed = yield* pass.pipe(
          Effect.as(false),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.as(down ? Effect.void : Effect.logWarning(`user operation watcher on ${net.name}: cannot read the chain; the follower settles meanwhile`, cause), true)
          )
        )
        if (down && !failed) yield* Effect.logInfo(`user operation watcher on ${net.name}: reading the chain again`)
        down = failed
        // A pushed head ends the wait at once.
        if (failed) yield* Effect.sleep(Duration.seconds(1))
        else yield* Effect.raceFirst(headPushed.wait, Effect.sleep(pushed ? pushedPoll : config.watchInterval))
      }
    })
  // `USEROPS_WATCH_INTERVAL=0`: no watching (the follower and the reconciler settle; waiters still wake).
  const watching = Duration.toMillis(config.watchInterval) > 0
  if (watching) for (const net of chains.all) yield* Effect.forkScoped(watchChain(net))

  yield* withMetrics((metrics) =>
    Effect.gen(function*() {
      yield* metrics.gaugeOf(
        { name: "das_userop_waiters", help: "Requests waiting for an operation's outcome (GET /userops/{id}?wait=) on this process" },
        Effect.sync(() => waiters)
      )
      yield* metrics.gaugeOf(
        { name: "das_userop_watched", help: "Operations this process watches on chain (waited on, or relayed here recently)" },
        Effect.sync(() => watched.size)
      )
    })
  )

  const refusal = (signer: string, address: string | undefined) => {
    if ((bySigner.get(signer) ?? 0) >= config.maxPerSigner) {
      return new TooManyRequests({
        message: `This signer already has ${config.maxPerSigner} requests waiting here; wait on fewer operations at once, or poll without \`wait\`.`,
        details: { retryAfterSeconds: 1, maxPerSigner: config.maxPerSigner }
      })
    }
    if (address !== undefined && (byAddress.get(address) ?? 0) >= config.maxPerAddress) {
      return new TooManyRequests({
        message: `Too many requests waiting from this address (${config.maxPerAddress}); retry shortly.`,
        details: { retryAfterSeconds: 1, maxPerAddress: config.maxPerAddress }
      })
    }
    if (waiters >= config.maxWaiters) {
      return new ServiceUnavailable({ message: "Too many requests are waiting; poll without `wait`, or retry shortly.", details: { retryAfterSeconds: 1 } })
    }
    return undefined
  }

  const register = (receipt: UserOpReceipt, signer: string, address: string | undefined) =>
    Effect.suspend(() => {
      const refused = refusal(signer, address)
      if (refused !== undefined) return Effect.fail(refused)
      const waiter: Waiter = { signer, address, signal: makeSignal(), settled: undefined }
      const w = track(receipt.userOpId, receipt.chainId, receipt.userOpHash)
      w.waiters.add(waiter)
      waiters++
      count(bySigner, signer, 1)
      if (address !== undefined) count(byAddress, address, 1)
      wakeWatcher(w.chainId)
      return Effect.succeed({ waiter, w })
    })

  const unregister = ({ w, waiter }: { readonly w: Watched; readonly waiter: Waiter }) =>
    Effect.sync(() => {
      if (!w.waiters.delete(waiter)) return
      waiters--
      count(bySigner, waiter.signer, -1)
      if (waiter.address !== undefined) count(byAddress, waiter.address, -1)
      // Neither waited on nor recently relayed: no longer watched.
      if (w.waiters.size === 0 && w.until < Date.now()) forget(w)
    })

  const decodeRows = Schema.decodeUnknownEffect(Schema.Array(OperationRow))
  const rowOf = (id: string) =>
    sql`SELECT * FROM user_operations WHERE id = ${id}`.pipe(
      Effect.flatMap(decodeRows),
      Effect.map((rows) => rows[0]),
      Effect.orDie
    )

  const parseWait = Effect.fn("ReceiptWaiters.parseWait")(function*(value: string | undefined) {
    if (value === undefined) return undefined
    const m = WAIT.exec(value)
    if (m === null) {
      return yield* new BadRequest({
        message: `\`wait\` must be a duration such as 30s, 30 (seconds) or 500ms; at most ${Duration.format(config.maxWait)} is waited.`,
        details: { field: "wait" }
      })
    }
    const ms = Number(m[1]) * (m[2] === "ms" ? 1 : 1000)
    return Math.min(ms, maxWaitMs)
  })

  const get = (signer: string, userOpId: string, waitMs: number | undefined, clientAddress: string | undefined) =>
    Effect.gen(function*() {
      const first = yield* relay.get(signer, userOpId)
      if (waitMs === undefined || waitMs <= 0 || isTerminal(first.status)) return first
      const deadline = Date.now() + waitMs
      return yield* Effect.scoped(Effect.gen(function*() {
        const { waiter } = yield* Effect.acquireRelease(register(first, signer, clientAddress), unregister)
        // Settled between the first read and the registration (its announcement found no waiter)?
        let row = yield* rowOf(userOpId)
        while (row !== undefined && !isTerminal(row.status)) {
          const left = deadline - Date.now()
          if (left <= 0) break
          const woken = yield* Effect.raceAll([
            Effect.as(waiter.signal.wait, true),
            Effect.as(Effect.sleep(Duration.millis(left)), false),
            Effect.as(stopping, false)
          ])
          if (!woken) break
          // Settled here: the committed row; elsewhere (NOTIFY): read it.
          row = waiter.settled ?? (yield* rowOf(userOpId))
        }
        // Terminal: the row read or handed over is the answer (the signer's own: checked by the
        // first read, and a row's signer never changes). Otherwise the relay's own answer (at the
        // deadline it asks the bundler once more, as a plain GET does).
        if (row !== undefined && isTerminal(row.status) && row.signer_address === signer) return toReceipt(row)
        return yield* relay.get(signer, userOpId)
      }))
    }).pipe(Effect.withSpan("ReceiptWaiters.get", { attributes: { waitMs: waitMs ?? 0 } }))

  const watch = (receipt: UserOpReceipt) =>
    Effect.sync(() => {
      if (!watching || isTerminal(receipt.status) || chains.find(receipt.chainId) === undefined) return
      const w = track(receipt.userOpId, receipt.chainId, receipt.userOpHash)
      w.until = Math.max(w.until, Date.now() + watchForMs)
      wakeWatcher(w.chainId)
    })

  return ReceiptWaiters.of({
    parseWait,
    get,
    watch,
    stats: Effect.sync(() => ({ waiters, watched: watched.size }))
  })
})
