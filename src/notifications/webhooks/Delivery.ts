/**
 * The webhook delivery worker: leases due outbox rows (`FOR UPDATE SKIP LOCKED`, so several
 * service processes share the work and never send the same attempt twice at once), POSTs the
 * signed body, records the attempt, and either marks the delivery delivered (2xx), schedules
 * the next try (exponential backoff with jitter), or dead-letters it after the last try.
 *
 * A lease expires (`WEBHOOKS_LEASE`): a process that stops mid-send leaves the row to be
 * taken again by any process — a delivery is never lost across a restart (at least once;
 * receivers deduplicate by the `webhook-id` header, the delivery id, also sent as the older
 * `X-Webhook-Id`). Signed per Standard Webhooks (Signature.ts). A lease is fenced by the
 * attempt number: a late answer from an expired lease changes nothing.
 */
import { Clock, Config, Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as http from "node:http"
import * as https from "node:https"
import { columns, NotificationRow, toNotification } from "../Notifications.ts"
import { runLoop } from "../../platform/Loop.ts"
import { Metrics, withMetrics } from "../../platform/Metrics.ts"
import { SIGNATURE_HEADER, signatureHeader, standardHeaders } from "./Signature.ts"
import { guardedLookup, type TargetPolicy, TargetPolicyConfig } from "./UrlGuard.ts"
import { makeLoopHealth } from "../../platform/LoopHealth.ts"
import { makeSignal } from "../../platform/Signal.ts"
import { NotificationHub } from "../NotificationHub.ts"

export interface DeliveryConfig {
  readonly maxAttempts: number
  readonly backoffBase: Duration.Duration
  readonly backoffMax: Duration.Duration
  readonly pollInterval: Duration.Duration
  readonly timeout: Duration.Duration
  readonly lease: Duration.Duration
  readonly batch: number
  readonly concurrency: number
  /** Also send the deprecated `X-Signature` (Signature.ts). */
  readonly legacySignature: boolean
}

export const DeliveryConfig: Config.Config<DeliveryConfig> = Config.all({
  maxAttempts: Config.Int("WEBHOOKS_MAX_ATTEMPTS").pipe(Config.withDefault(8)),
  backoffBase: Config.Duration("WEBHOOKS_BACKOFF_BASE").pipe(Config.withDefault(Duration.seconds(10))),
  backoffMax: Config.Duration("WEBHOOKS_BACKOFF_MAX").pipe(Config.withDefault(Duration.hours(1))),
  // A fallback: deliveries start when their notification is committed (the listener's wake-up).
  pollInterval: Config.Duration("WEBHOOKS_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(5))),
  timeout: Config.Duration("WEBHOOKS_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))),
  lease: Config.Duration("WEBHOOKS_LEASE").pipe(Config.withDefault(Duration.seconds(60))),
  batch: Config.Int("WEBHOOKS_BATCH").pipe(Config.withDefault(100)),
  concurrency: Config.Int("WEBHOOKS_CONCURRENCY").pipe(Config.withDefault(32)),
  legacySignature: Config.Boolean("WEBHOOKS_LEGACY_SIGNATURE").pipe(Config.withDefault(true))
}).pipe(Config.map((c) => ({ ...c, maxAttempts: Math.max(1, c.maxAttempts), batch: Math.max(1, c.batch) })))

/** The wait before try `n + 1` after `n` failed tries: base·2^(n−1), capped, with "equal jitter" (½ to 1×). */
export const backoffMillis = (config: DeliveryConfig, failedTries: number, random = Math.random()) => {
  const base = Duration.toMillis(config.backoffBase) * 2 ** Math.max(0, failedTries - 1)
  const capped = Math.min(base, Duration.toMillis(config.backoffMax))
  return Math.round(capped / 2 + (capped / 2) * random)
}

interface Outcome {
  readonly statusCode: number | null
  readonly error: string | null
}

/** One POST, no redirects followed, the connection's DNS lookup guarded. */
const post = (url: string, body: string, headers: Record<string, string>, policy: TargetPolicy, timeoutMs: number) =>
  Effect.callback<Outcome>((resume) => {
    const u = new URL(url)
    const lib = u.protocol === "https:" ? https : http
    const req = lib.request(u, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body).toString() },
      lookup: guardedLookup(policy),
      timeout: timeoutMs
    }, (res) => {
      res.resume() // the answer's body is not kept
      res.on("end", () => {
        const code = res.statusCode ?? 0
        resume(Effect.succeed({
          statusCode: code,
          error: code >= 200 && code < 300 ? null : code >= 300 && code < 400 ? "redirect not followed" : `HTTP ${code}`
        }))
      })
      res.on("error", (e) => resume(Effect.succeed({ statusCode: code(res), error: e.message })))
    })
    const code = (res: http.IncomingMessage) => res.statusCode ?? null
    req.on("timeout", () => req.destroy(new Error("timed out")))
    req.on("error", (e) => resume(Effect.succeed({ statusCode: null, error: e.message.slice(0, 200) })))
    req.end(body)
    return Effect.sync(() => req.destroy())
  })

const Leased = Schema.Struct({
  id: Schema.String,
  attempts: Schema.Number,
  replayed_from: Schema.Number,
  notification_id: Schema.String,
  url: Schema.String,
  secret: Schema.String
})
const decodeLeased = Schema.decodeUnknownEffect(Schema.Array(Leased))
const decodeNotifications = Schema.decodeUnknownEffect(Schema.Array(NotificationRow))

export const makeWorker = Effect.fn("WebhookDelivery.make")(function*(config: DeliveryConfig, policy: TargetPolicy) {
  const sql = yield* SqlClient.SqlClient
  const metrics = yield* Effect.serviceOption(Metrics)
  const attemptsTotal = Option.isNone(metrics) ? undefined : metrics.value.counter({
    name: "das_webhook_attempts_total",
    help: "Webhook delivery attempts by this process, by result: delivered (2xx), failed (retried later), dead (the last try failed)",
    labelNames: ["result"]
  })

  const lease = sql`
    WITH due AS (
      SELECT id FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= now() AND (leased_until IS NULL OR leased_until < now())
      ORDER BY next_attempt_at LIMIT ${config.batch}
      FOR UPDATE SKIP LOCKED)
    UPDATE webhook_deliveries d
    SET leased_until = now() + ${`${Duration.toMillis(config.lease)} milliseconds`}::interval, attempts = d.attempts + 1
    FROM due, webhook_endpoints e
    WHERE d.id = due.id AND e.id = d.endpoint_id AND e.deleted_at IS NULL
    RETURNING d.id, d.attempts, d.replayed_from, d.notification_id, e.url, e.secret`

  const send = Effect.fn("WebhookDelivery.send")(function*(
    d: typeof Leased.Type,
    notifications: ReadonlyMap<string, typeof NotificationRow.Type>
  ) {
    const row = notifications.get(d.notification_id)
    const started = yield* Clock.currentTimeMillis
    const body = JSON.stringify({
      id: d.id,
      type: "notification.created",
      data: row === undefined ? null : toNotification(row, started)
    })
    const timestamp = Math.floor(started / 1000)
    const outcome = yield* post(d.url, body, {
      ...standardHeaders(d.secret, d.id, timestamp, body),
      ...(config.legacySignature ? { [SIGNATURE_HEADER]: signatureHeader(d.secret, timestamp, body) } : {}),
      "x-webhook-id": d.id,
      "x-webhook-attempt": String(d.attempts - d.replayed_from),
      "user-agent": "das-webhooks/1"
    }, policy, Duration.toMillis(config.timeout))
    const duration = (yield* Clock.currentTimeMillis) - started
    const ok = outcome.error === null
    const last = d.attempts - d.replayed_from >= config.maxAttempts
    attemptsTotal?.inc({ result: ok ? "delivered" : last ? "dead" : "failed" })
    yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms)
                 VALUES (${d.id}, ${d.attempts}, ${new Date(started)}, ${outcome.statusCode}, ${outcome.error}, ${duration})
                 ON CONFLICT DO NOTHING`
      // Fenced by the attempt number: only the holder of this lease settles it.
      if (ok) {
        yield* sql`UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), leased_until = NULL,
                     last_error = NULL
                   WHERE id = ${d.id} AND attempts = ${d.attempts} AND status = 'pending'`
      } else if (last) {
        yield* sql`UPDATE webhook_deliveries SET status = 'dead', leased_until = NULL, last_error = ${outcome.error}
                   WHERE id = ${d.id} AND attempts = ${d.attempts} AND status = 'pending'`
      } else {
        const wait = backoffMillis(config, d.attempts - d.replayed_from)
        yield* sql`UPDATE webhook_deliveries SET leased_until = NULL, last_error = ${outcome.error},
                     next_attempt_at = now() + ${`${wait} milliseconds`}::interval
                   WHERE id = ${d.id} AND attempts = ${d.attempts} AND status = 'pending'`
      }
    }))
  }, Effect.orDie)

  /** Leases and sends one batch; answers how many were leased. */
  const runOnce = Effect.gen(function*() {
    const leased = yield* decodeLeased(yield* lease)
    if (leased.length === 0) return 0
    const ids = [...new Set(leased.map((d) => d.notification_id))]
    const rows = yield* decodeNotifications(
      yield* sql`SELECT ${sql.literal(columns)} FROM notifications WHERE id IN ${sql.in(ids)}`
    )
    const byId = new Map(rows.map((r) => [r.id, r]))
    yield* Effect.forEach(leased, (d) => send(d, byId), { concurrency: config.concurrency, discard: true })
    return leased.length
  }).pipe(Effect.orDie, Effect.withSpan("WebhookDelivery.runOnce"))

  /** Drains every due delivery (batch after batch); answers how many were leased. */
  const drain = Effect.gen(function*() {
    let total = 0
    while (true) {
      const leased = yield* runOnce
      total += leased
      // a full batch: there may be more due
      if (leased < config.batch) return total
    }
  })

  return { runOnce, drain }
})

/** The outbox, read at scrape time: deliveries waiting (and due now), and how long the oldest due one has waited. */
const registerQueueMetrics = withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = sql<{ pending: number; due: number; oldest: number | null }>`
      SELECT count(*)::int AS pending, count(*) FILTER (WHERE next_attempt_at <= now())::int AS due,
        extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()))::float8 AS oldest
      FROM webhook_deliveries WHERE status = 'pending'`.pipe(Effect.map((rows) => rows[0]))
    yield* metrics.gaugeOf(
      {
        name: "das_webhook_queue_deliveries",
        help: "Webhook deliveries waiting in the outbox: pending (not yet delivered or dead), due (to be sent now)",
        labelNames: ["state"]
      },
      Effect.map(queue, (q) => [{ labels: { state: "pending" }, value: q?.pending ?? 0 }, { labels: { state: "due" }, value: q?.due ?? 0 }])
    )
    yield* metrics.gaugeOf(
      { name: "das_webhook_queue_oldest_due_seconds", help: "How long the oldest due webhook delivery has waited (0: none due)" },
      Effect.map(queue, (q) => q?.oldest ?? 0)
    )
  })
)

/**
 * The worker running for the life of the layer. It passes when a notification is committed
 * (the process's notifications listener, `NotificationHub.onAnnounced`: its outbox rows were
 * written in the same transaction), and every `WEBHOOKS_POLL_INTERVAL` as a fallback (retries
 * coming due, a replay, a listener that is down). Without a hub (a worker alone) it only polls.
 */
export const WebhookDeliveryLive: Layer.Layer<never, Config.ConfigError, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* DeliveryConfig
    const worker = yield* makeWorker(config, yield* TargetPolicyConfig)
    yield* registerQueueMetrics
    const hub = yield* Effect.serviceOption(NotificationHub)
    const committed = makeSignal()
    if (Option.isSome(hub)) yield* hub.value.onAnnounced(committed.fire)
    // A failed pass is logged (a database outage once: LoopHealth); the next pass tries again.
    const health = makeLoopHealth("webhook delivery")
    yield* runLoop({
      name: "webhook delivery",
      interval: config.pollInterval,
      wake: committed.wait,
      pass: health.pass(
        Effect.map(worker.drain, (leased) => (leased > 0 ? "worked" as const : "idle" as const)),
        "worked",
        "webhook delivery pass failed"
      )
    })
  })
)
