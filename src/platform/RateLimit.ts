/**
 * Rate limits: `limit` requests per `window` per key (an IP address, a signer), as a token
 * bucket refilled continuously (the generic cell rate algorithm: one timestamp per key), so a
 * client that keeps to the rate is never refused and a burst of up to `limit` is allowed.
 *
 * Two stores with the same arithmetic:
 * - `RateLimitStore.layerDatabase`: one bucket per key shared by every service process on the
 *   database (`rate_limit_take`, migration 0252), on the database's clock. The service's.
 * - `makeRateLimiter`: in this process's memory; idle keys are dropped, so memory follows the
 *   keys active within one window. For an edge composed without a database (unit tests).
 *
 * A decision carries what the `RateLimit-*` headers say (docs/edge.md).
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { runLoop } from "./Loop.ts"

export interface RateRule {
  /** Requests allowed per window; 0 turns the rule off. */
  readonly limit: number
  readonly window: Duration.Duration
}

export interface RateDecision {
  readonly allowed: boolean
  readonly limit: number
  /** Requests left now (after this one). */
  readonly remaining: number
  /** Seconds until the bucket is full again. */
  readonly resetSeconds: number
  /** When refused: seconds until one request is allowed (at least 1). */
  readonly retryAfterSeconds: number
}

export interface RateLimiter {
  readonly take: (key: string, now?: number) => RateDecision
  /** Keys currently tracked (for tests and metrics). */
  readonly size: () => number
}

const SWEEP_EVERY = 1024

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000))

/** A decision from the bucket's time after the request (`next`, ms) and whether it was taken. */
const decide = (
  rule: RateRule,
  windowMs: number,
  emissionMs: number,
  allowed: boolean,
  tatAfter: number,
  retryAfterMs: number,
  now: number
): RateDecision => ({
  allowed,
  limit: rule.limit,
  remaining: allowed ? Math.max(0, Math.floor((windowMs - (tatAfter - now)) / emissionMs + 1e-9)) : 0,
  resetSeconds: seconds(tatAfter - now),
  retryAfterSeconds: allowed ? 0 : Math.max(1, seconds(retryAfterMs))
})

export const makeRateLimiter = (rule: RateRule): RateLimiter => {
  const tats = new Map<string, number>()
  const windowMs = Math.max(1, Duration.toMillis(rule.window))
  const emissionMs = windowMs / Math.max(1, rule.limit)
  let calls = 0

  // A bucket whose time is past is full: it carries no information.
  const sweep = (now: number) => {
    for (const [key, tat] of tats) if (tat <= now) tats.delete(key)
  }

  const take = (key: string, now = Date.now()): RateDecision => {
    if (rule.limit <= 0) return { allowed: true, limit: 0, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0 }
    if (++calls % SWEEP_EVERY === 0) sweep(now)
    const stored = tats.get(key) ?? now
    const next = Math.max(stored, now) + emissionMs
    if (next - now > windowMs + 1e-9) {
      return decide(rule, windowMs, emissionMs, false, stored, next - windowMs - now, now)
    }
    tats.set(key, next)
    return decide(rule, windowMs, emissionMs, true, next, 0, now)
  }

  return { take, size: () => tats.size }
}

/** Buckets in this process's memory, one limiter per bucket name. */
export const makeMemoryStore = () => {
  const limiters = new Map<string, RateLimiter>()
  return {
    take: (bucket: string, rule: RateRule, key: string) =>
      Effect.sync(() => {
        let limiter = limiters.get(bucket)
        if (limiter === undefined) limiters.set(bucket, limiter = makeRateLimiter(rule))
        return limiter.take(key)
      })
  }
}

const TakeRow = Schema.Struct({
  allowed: Schema.Boolean,
  remaining: Schema.Number,
  reset_ms: Schema.NumberFromString,
  retry_after_ms: Schema.NumberFromString
})
const decodeTake = Schema.decodeUnknownEffect(Schema.Array(TakeRow))

/** Where the buckets live. */
export class RateLimitStore extends Context.Service<RateLimitStore, {
  /** Takes one request from `key`'s bucket of rule `bucket` (a name: `nonce`, `session`, `builds`). */
  readonly take: (bucket: string, rule: RateRule, key: string) => Effect.Effect<RateDecision>
}>()("das/platform/RateLimitStore") {
  /** In this process's memory (one limiter per rule name). */
  static readonly layerMemory = Layer.sync(RateLimitStore, () => makeMemoryStore())

  /**
   * In the database, shared by every process on it. A failure of the database is the edge's to
   * answer (503 while it is unreachable), as for any other query of the request. Full buckets
   * are swept every minute.
   */
  static readonly layerDatabase = Layer.effect(
    RateLimitStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* runLoop({
        name: "rate-limit sweep",
        interval: Duration.minutes(1),
        initialDelay: Duration.minutes(1),
        pass: sql`DELETE FROM rate_limits WHERE tat < now()`.pipe(
          Effect.as("idle" as const),
          Effect.catchCause((cause) => Effect.as(Effect.logDebug("rate limits: sweep failed", cause), "idle" as const))
        )
      })
      return RateLimitStore.of({
        take: (bucket, rule, key) => {
          if (rule.limit <= 0) return Effect.succeed({ allowed: true, limit: 0, remaining: 0, resetSeconds: 0, retryAfterSeconds: 0 })
          return sql`SELECT allowed, remaining, reset_ms::text AS reset_ms, retry_after_ms::text AS retry_after_ms
                     FROM rate_limit_take(${bucket}, ${key}, ${rule.limit}, ${Duration.toMillis(rule.window)})`.pipe(
            Effect.flatMap(decodeTake),
            Effect.map(([row]): RateDecision => ({
              allowed: row!.allowed,
              limit: rule.limit,
              remaining: row!.remaining,
              resetSeconds: seconds(row!.reset_ms),
              retryAfterSeconds: row!.allowed ? 0 : Math.max(1, seconds(row!.retry_after_ms))
            })),
            Effect.orDie
          )
        }
      })
    })
  )
}

/** The `RateLimit-*` headers of a decision (draft-ietf-httpapi-ratelimit-headers). */
export const rateLimitHeaders = (d: RateDecision): Record<string, string> => ({
  "ratelimit-limit": String(d.limit),
  "ratelimit-remaining": String(d.remaining),
  "ratelimit-reset": String(d.resetSeconds)
})
