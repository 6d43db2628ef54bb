/**
 * The live notifications stream (`GET /notifications/stream`), shared by every subscriber
 * of this process.
 *
 * ONE PostgreSQL listener per process (channel `das_notifications`, raised by a trigger at
 * COMMIT, so a notification written by any service process reaches subscribers on every
 * process) is the single source of new notifications. Each announced notification is read
 * once (one query per batch of announcements, only for signers someone here listens to),
 * encoded once into its SSE bytes, and the same bytes are handed to every subscriber of that
 * signer.
 *
 * Streams are shared fairly: at most `maxPerSigner` open streams per signer and `maxPerAddress` per
 * client address (its peer key: an IPv4 address, an IPv6 /64), each a share of the process's `maxSubscribers`, so one signer
 * (or one address with many fresh keys) cannot take every slot.
 *
 * Each subscriber holds at most `maxBuffer` unsent events: a reader that falls further
 * behind is disconnected (its stream ends) and resumes with `Last-Event-ID`, replaying what
 * it missed from the table — memory stays bounded and nothing is lost. One shared ticker
 * marks every subscriber for a heartbeat. A subscriber leaves as soon as its stream ends or
 * is interrupted (client disconnect). If the listener's connection fails, every stream is
 * ended (clients resume and replay) and the listener reconnects.
 */
import { PgClient } from "@effect/sql-pg"
import { Clock, Config, Context, Data, Deferred, Duration, Effect, Layer, Option, Queue, Schedule, Schema, type Scope, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { BadRequest, ServiceUnavailable, TooManyRequests } from "../api/Errors.ts"
import { normalizeAddress } from "../accounts/Accounts.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import type { Address } from "../domain/Primitives.ts"
import { Lifecycle } from "../platform/Lifecycle.ts"
import { withMetrics } from "../platform/Metrics.ts"
import { columns, NotificationRow, toNotification } from "./Notifications.ts"

export interface NotificationHubConfig {
  readonly heartbeatInterval: Duration.Duration
  /** Most unsent events one subscriber may hold before it is disconnected (it resumes with Last-Event-ID). */
  readonly maxBuffer: number
  /** Most missed notifications replayed on resume. */
  readonly replayLimit: number
  readonly maxSubscribers: number
  /** Most open streams of one signer in this process (at most `maxSubscribers`). */
  readonly maxPerSigner: number
  /** Most open streams from one peer (an IPv4 address, an IPv6 /64) in this process (at most `maxSubscribers`). */
  readonly maxPerAddress: number
}

export const NotificationHubConfig: Config.Config<NotificationHubConfig> = Config.all({
  heartbeatInterval: Config.Duration("NOTIFICATIONS_STREAM_HEARTBEAT").pipe(Config.withDefault(Duration.seconds(15))),
  maxBuffer: Config.Int("NOTIFICATIONS_STREAM_MAX_BUFFER").pipe(Config.withDefault(256)),
  replayLimit: Config.Int("NOTIFICATIONS_STREAM_REPLAY_LIMIT").pipe(Config.withDefault(500)),
  maxSubscribers: Config.Int("NOTIFICATIONS_STREAM_MAX_SUBSCRIBERS").pipe(Config.withDefault(20_000)),
  maxPerSigner: Config.Int("NOTIFICATIONS_STREAM_MAX_PER_SIGNER").pipe(Config.withDefault(16)),
  maxPerAddress: Config.Int("NOTIFICATIONS_STREAM_MAX_PER_ADDRESS").pipe(Config.withDefault(1_000))
}).pipe(Config.map((c) => {
  const maxSubscribers = Math.max(1, c.maxSubscribers)
  // A share of the global cap, never more (0: the global cap alone).
  const share = (n: number) => (n <= 0 ? maxSubscribers : Math.min(n, maxSubscribers))
  return {
    ...c,
    maxBuffer: Math.max(1, c.maxBuffer),
    replayLimit: Math.max(1, Math.min(c.replayLimit, 5000)),
    maxSubscribers,
    maxPerSigner: share(c.maxPerSigner),
    maxPerAddress: share(c.maxPerAddress)
  }
}))

export const CHANNEL = "das_notifications"

interface Subscriber {
  readonly signer: string
  /** The client address it came from (`undefined`: not counted per address, e.g. a caller inside the process). */
  readonly address: string | undefined
  readonly pending: Array<Uint8Array>
  /** Seqs already sent by the replay: a live copy of one of them is skipped. */
  replayed: Set<string> | undefined
  /**
   * Live events that arrived while the replay was being read (it is not known yet which of them
   * it holds): kept aside, then passed on unless the replay sent them.
   */
  held: Array<{ readonly seq: string; readonly bytes: Uint8Array }> | undefined
  heartbeat: boolean
  closed: boolean
  wake: (() => void) | undefined
}

export interface HubStats {
  readonly subscribers: number
  readonly signers: number
  /** Client addresses with an open stream. */
  readonly addresses: number
  /** Notifications read and encoded (once each, whatever the number of subscribers). */
  readonly encoded: number
}

export class NotificationHub extends Context.Service<NotificationHub, {
  /** Validates `Last-Event-ID` (a decimal sequence number). */
  parseLastEventId(value: string | undefined): Effect.Effect<bigint | undefined, BadRequest>
  /**
   * Checked before a response starts: 429 when the signer or the client address holds its
   * share of streams already, 503 when the process is at capacity. The stream checks again
   * when it joins (concurrent requests may pass this check together).
   */
  admit(signer: Address, clientAddress: string | undefined): Effect.Effect<void, ServiceUnavailable | TooManyRequests>
  /** The SSE body for one signer: a comment, the replay after `lastEventId`, then live events and heartbeats. */
  sse(
    signer: Address,
    lastEventId: bigint | undefined,
    clientAddress?: string
  ): Stream.Stream<Uint8Array, ServiceUnavailable | TooManyRequests>
  readonly stats: Effect.Effect<HubStats>
  /**
   * Calls `f` on every batch of committed notifications this process hears of (any signer),
   * and once the listener (re)connects (some may have been missed): the webhook worker's wake-up.
   */
  onAnnounced(f: () => void): Effect.Effect<void, never, Scope.Scope>
}>()("das/notifications/NotificationHub") {}

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(": heartbeat\n\n")

const StreamRow = Schema.Struct({ ...NotificationRow.fields, seq: Schema.String, signer_address: Schema.String })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(StreamRow))

/** How long the listener waits for its own probe. */
const PROBE_TIMEOUT = Duration.seconds(5)

/** The listener did not hear its own NOTIFY: LISTEN does not hold on this connection. */
export class ListenerDeaf extends Data.TaggedError("ListenerDeaf")<{}> {
  override get message() {
    return `the notifications listener did not hear its own NOTIFY within ${Duration.format(PROBE_TIMEOUT)}: ` +
      "its connection does not keep a session (a pooler in transaction mode?). Set DATABASE_POOLER=transaction " +
      "and DATABASE_DIRECT_URL to PostgreSQL itself (docs/operations.md, \"PgBouncer\")"
  }
}

export const make = Effect.fn("NotificationHub.make")(function*(config: NotificationHubConfig) {
  const sql = yield* SqlClient.SqlClient
  const pg = yield* PgClient.PgClient
  const bySigner = new Map<string, Set<Subscriber>>()
  const byAddress = new Map<string, number>()
  let count = 0
  let encoded = 0

  const wakeUp = (s: Subscriber) => {
    const w = s.wake
    if (w !== undefined) {
      s.wake = undefined
      w()
    }
  }

  const encode = (row: typeof StreamRow.Type, now: number): Uint8Array => {
    encoded++
    return encoder.encode(`id: ${row.seq}\ndata: ${JSON.stringify(toNotification(row, now))}\n\n`)
  }

  const push = (s: Subscriber, seq: string, bytes: Uint8Array) => {
    if (s.closed) return
    if (s.held !== undefined) {
      s.held.push({ seq, bytes })
      return
    }
    if (s.replayed?.has(seq)) return
    if (s.pending.length >= config.maxBuffer) {
      s.closed = true // too slow: ends its stream; the client resumes with Last-Event-ID
    } else s.pending.push(bytes)
    wakeUp(s)
  }

  const closeAll = () => {
    for (const set of bySigner.values()) for (const s of set) {
      s.closed = true
      wakeUp(s)
    }
  }

  /** One batch of announcements ("seq:signer"): read the rows someone here listens to, encode each once, fan out. */
  const dispatch = Effect.fn("NotificationHub.dispatch")(function*(payloads: ReadonlyArray<string>) {
    const seqs: Array<string> = []
    for (const p of payloads) {
      const i = p.indexOf(":")
      if (i > 0 && bySigner.has(p.slice(i + 1)) && /^\d+$/.test(p.slice(0, i))) seqs.push(p.slice(0, i))
    }
    if (seqs.length === 0) return
    const rows = yield* decodeRows(
      yield* sql`SELECT ${sql.literal(columns)}, seq::text AS seq, signer_address FROM notifications
                 WHERE seq IN ${sql.in(seqs)} ORDER BY seq`
    )
    const now = yield* Clock.currentTimeMillis
    for (const row of rows) {
      const subs = bySigner.get(row.signer_address)
      if (subs === undefined) continue
      const bytes = encode(row, now)
      for (const s of subs) push(s, row.seq, bytes)
    }
  }, Effect.orDie)

  const announced = new Set<() => void>()
  const announce = () => {
    for (const f of announced) f()
  }

  const health = makeLoopHealth("notifications listener")
  /** Settled by the first listener that hears its probe, or that does not (a start that cannot work). */
  const firstProbe = yield* Deferred.make<void, ListenerDeaf>()
  const listenOnce = Effect.scoped(Effect.gen(function*() {
    const queue = yield* pg.listen(CHANNEL)
    // The listener hears its own probe before it counts as up: a connection that only seems to
    // listen (a transaction pooler's, whose server connection goes to other clients between
    // statements) would otherwise drop every event in silence. Other processes' probes and
    // events heard meanwhile are ignored or dispatched as usual.
    const probe = `probe:${crypto.randomUUID()}`
    yield* sql`SELECT pg_notify(${CHANNEL}, ${probe})`
    const heard = yield* Effect.gen(function*() {
      while (true) {
        const payloads = (yield* Queue.takeAll(queue)).map((n) => n.payload)
        yield* dispatch(payloads)
        if (payloads.includes(probe)) return
      }
    }).pipe(Effect.timeoutOption(PROBE_TIMEOUT))
    if (Option.isNone(heard)) {
      const deaf = new ListenerDeaf()
      yield* Deferred.fail(firstProbe, deaf)
      return yield* Effect.fail(deaf)
    }
    yield* Deferred.succeed(firstProbe, undefined)
    yield* health.succeeded
    announce()
    while (true) {
      const batch = yield* Queue.takeAll(queue)
      announce()
      yield* dispatch(batch.map((n) => n.payload))
    }
  }))

  // Each failure ends every stream (clients resume); a database outage is logged once (LoopHealth).
  const listener = listenOnce.pipe(
    Effect.tapCause((cause) =>
      Effect.andThen(Effect.sync(closeAll), health.failed(cause, "notifications listener lost; reconnecting"))),
    Effect.retry(Schedule.spaced(Duration.seconds(1)))
  )
  yield* Effect.forkScoped(listener)
  // A listener that cannot hear itself at the start is a configuration that cannot work: say so
  // and stop. A database merely slow to connect is not waited for past three probes' time (the
  // listener goes on trying, and logs).
  const first = yield* Deferred.await(firstProbe).pipe(Effect.timeoutOption(Duration.times(PROBE_TIMEOUT, 3)), Effect.result)
  if (first._tag === "Failure") return yield* Effect.die(first.failure)
  yield* withMetrics((metrics) =>
    Effect.gen(function*() {
      yield* metrics.gaugeOf(
        { name: "das_notification_stream_subscribers", help: "Open notification streams (GET /notifications/stream) on this process" },
        Effect.sync(() => count)
      )
      yield* metrics.gaugeOf(
        {
          name: "das_notification_stream_buffered_events",
          help: "Events encoded but not yet taken by their streams' readers, over every stream of this process"
        },
        Effect.sync(() => {
          let n = 0
          for (const set of bySigner.values()) for (const s of set) n += s.pending.length
          return n
        })
      )
    })
  )
  // Shutdown: every stream ends (its client reconnects, to another process) and no new one opens.
  const lifecycle = yield* Effect.serviceOption(Lifecycle)
  const draining = Option.isSome(lifecycle) ? lifecycle.value.isDraining : () => false
  if (Option.isSome(lifecycle)) yield* Effect.forkScoped(Effect.andThen(lifecycle.value.whenDraining, Effect.sync(closeAll)))
  yield* Effect.forkScoped(Effect.repeat(
    Effect.delay(Effect.sync(() => {
      for (const set of bySigner.values()) for (const s of set) {
        s.heartbeat = true
        wakeUp(s)
      }
    }), config.heartbeatInterval),
    Schedule.forever
  ))

  const atCapacity = () => new ServiceUnavailable({ message: "The notifications stream is at capacity; retry shortly." })

  const shuttingDown = () => new ServiceUnavailable({ message: "The service is shutting down; reconnect." })

  /** Why a new stream of `signer` from `address` is refused now, if it is: each signer and each address get a share. */
  const refusal = (signer: string, address: string | undefined): ServiceUnavailable | TooManyRequests | undefined => {
    if (draining()) return shuttingDown()
    if ((bySigner.get(signer)?.size ?? 0) >= config.maxPerSigner) {
      return new TooManyRequests({
        message: `This signer already has ${config.maxPerSigner} open notification streams here; close one (or resume it) first.`,
        details: { retryAfterSeconds: 10, maxPerSigner: config.maxPerSigner }
      })
    }
    if (address !== undefined && (byAddress.get(address) ?? 0) >= config.maxPerAddress) {
      return new TooManyRequests({
        message: `Too many open notification streams from this address (${config.maxPerAddress}); retry shortly.`,
        details: { retryAfterSeconds: 10, maxPerAddress: config.maxPerAddress }
      })
    }
    return count >= config.maxSubscribers ? atCapacity() : undefined
  }

  const register = (signer: string, address: string | undefined, replaying: boolean) =>
    Effect.suspend(() => {
      const refused = refusal(signer, address)
      if (refused !== undefined) return Effect.fail(refused)
      const s: Subscriber = { signer, address, pending: [], replayed: undefined, held: replaying ? [] : undefined, heartbeat: false, closed: false, wake: undefined }
      let set = bySigner.get(signer)
      if (set === undefined) bySigner.set(signer, set = new Set())
      set.add(s)
      if (address !== undefined) byAddress.set(address, (byAddress.get(address) ?? 0) + 1)
      count++
      return Effect.succeed(s)
    })

  const unregister = (s: Subscriber) =>
    Effect.sync(() => {
      const set = bySigner.get(s.signer)
      if (set !== undefined && set.delete(s)) {
        count--
        if (set.size === 0) bySigner.delete(s.signer)
        if (s.address !== undefined) {
          const n = (byAddress.get(s.address) ?? 1) - 1
          if (n <= 0) byAddress.delete(s.address)
          else byAddress.set(s.address, n)
        }
      }
      s.pending.length = 0
      s.closed = true
      s.wake = undefined
    })

  /** Waits until something is due; `undefined` once the subscriber is closed (after what it still holds). */
  const take = (s: Subscriber): Effect.Effect<Array<Uint8Array> | undefined> =>
    Effect.callback<Array<Uint8Array> | undefined>((resume) => {
      const drain = () => {
        if (s.pending.length > 0) return s.pending.splice(0, s.pending.length)
        if (s.closed) return undefined
        s.heartbeat = false
        return [HEARTBEAT]
      }
      if (s.pending.length > 0 || s.heartbeat || s.closed) return resume(Effect.sync(drain))
      s.wake = () => resume(Effect.sync(drain))
      return Effect.sync(() => {
        s.wake = undefined
      })
    })

  /** The missed notifications after `after` (the newest `replayLimit` of them, oldest first). */
  const replay = Effect.fn("NotificationHub.replay")(function*(signer: string, after: bigint) {
    const rows = yield* decodeRows(
      yield* sql`SELECT * FROM (
                   SELECT ${sql.literal(columns)}, seq::text AS seq, signer_address, seq AS n FROM notifications
                   WHERE signer_address = ${signer} AND seq > ${after.toString()}
                   ORDER BY seq DESC LIMIT ${config.replayLimit}) r ORDER BY n`
    )
    const now = yield* Clock.currentTimeMillis
    return rows.map((row) => ({ seq: row.seq, bytes: encode(row, now) }))
  }, Effect.orDie)

  const parseLastEventId = Effect.fn("NotificationHub.parseLastEventId")(function*(value: string | undefined) {
    if (value === undefined || value.trim() === "") return undefined
    if (!/^\d{1,18}$/.test(value.trim())) {
      return yield* new BadRequest({ message: "`Last-Event-ID` must be an event id this stream sent (a decimal number)." })
    }
    return BigInt(value.trim())
  })

  const open = (signer: string, lastEventId: bigint | undefined, address: string | undefined) =>
    Effect.gen(function*() {
      // Join first, then replay: a notification committed in between is live AND replayed. Live
      // events are held aside while the replay is read (one could arrive before the replay's answer,
      // which may hold it too), then each is passed on unless the replay sent it: every event once.
      const s = yield* Effect.acquireRelease(register(signer, address, lastEventId !== undefined), unregister)
      if (lastEventId === undefined) return { s, first: [] as Array<Uint8Array> }
      const missed = yield* replay(signer, lastEventId).pipe(Effect.onError(() => Effect.sync(() => { s.held = undefined })))
      s.replayed = new Set(missed.map((m) => m.seq))
      const held = s.held ?? []
      s.held = undefined
      for (const h of held) push(s, h.seq, h.bytes)
      const replayedBytes = missed.map((m) => m.bytes)
      return { s, first: replayedBytes }
    })

  const sse = (
    signer: Address,
    lastEventId: bigint | undefined,
    clientAddress?: string
  ): Stream.Stream<Uint8Array, ServiceUnavailable | TooManyRequests> =>
    Stream.unwrap(
      Effect.map(open(normalizeAddress(signer), lastEventId, clientAddress), ({ first, s }) =>
        Stream.concat(
          Stream.fromIterable([encoder.encode(": connected\nretry: 3000\n\n"), ...first]),
          Stream.fromEffectRepeat(take(s)).pipe(
            Stream.takeWhile((chunk): chunk is Array<Uint8Array> => chunk !== undefined),
            Stream.flattenIterable
          )
        ))
    )

  const admit = (signer: Address, clientAddress: string | undefined) =>
    Effect.suspend(() => {
      const refused = refusal(normalizeAddress(signer), clientAddress)
      return refused === undefined ? Effect.void : Effect.fail(refused)
    })

  return NotificationHub.of({
    parseLastEventId,
    admit,
    sse,
    stats: Effect.sync(() => ({ subscribers: count, signers: bySigner.size, addresses: byAddress.size, encoded })),
    onAnnounced: (f) =>
      Effect.acquireRelease(Effect.sync(() => announced.add(f)), () => Effect.sync(() => announced.delete(f))).pipe(Effect.asVoid)
  })
})

/** Requires `PgClient` (the listener) and `SqlClient`; reads the `NOTIFICATIONS_STREAM_*` keys. */
export const NotificationHubLive: Layer.Layer<
  NotificationHub,
  Config.ConfigError,
  PgClient.PgClient | SqlClient.SqlClient
> = Layer.effect(NotificationHub, Effect.gen(function*() {
  return yield* make(yield* NotificationHubConfig)
}))

