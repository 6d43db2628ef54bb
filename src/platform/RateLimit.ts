/**
 * In-process token buckets: `limit` requests per `window` per key (an IP address, a
 * signer), refilled continuously, so a client that keeps to the rate is never refused
 * and a burst of up to `limit` is allowed. Idle keys are dropped, so memory stays
 * bounded by the number of keys active within one window.
 *
 * The limits are per process: with several replicas each enforces its own share.
 */
import { Duration } from "effect"

export interface RateRule {
  /** Requests allowed per window; 0 turns the rule off. */
  readonly limit: number
  readonly window: Duration.Duration
}

export type RateDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterSeconds: number }

interface Bucket {
  tokens: number
  updatedAt: number
}

export interface RateLimiter {
  readonly take: (key: string, now?: number) => RateDecision
  /** Keys currently tracked (for tests and metrics). */
  readonly size: () => number
}

const SWEEP_EVERY = 1024

export const makeRateLimiter = (rule: RateRule): RateLimiter => {
  const buckets = new Map<string, Bucket>()
  const windowMs = Math.max(1, Duration.toMillis(rule.window))
  const perMs = rule.limit / windowMs
  let calls = 0

  const refill = (bucket: Bucket, now: number) => {
    const elapsed = Math.max(0, now - bucket.updatedAt)
    bucket.tokens = Math.min(rule.limit, bucket.tokens + elapsed * perMs)
    bucket.updatedAt = now
  }

  // A full bucket carries no information: forget it.
  const sweep = (now: number) => {
    for (const [key, bucket] of buckets) {
      refill(bucket, now)
      if (bucket.tokens >= rule.limit) buckets.delete(key)
    }
  }

  const take = (key: string, now = Date.now()): RateDecision => {
    if (rule.limit <= 0) return { allowed: true }
    if (++calls % SWEEP_EVERY === 0) sweep(now)
    let bucket = buckets.get(key)
    if (bucket === undefined) {
      bucket = { tokens: rule.limit, updatedAt: now }
      buckets.set(key, bucket)
    } else {
      refill(bucket, now)
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return { allowed: true }
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) }
  }

  return { take, size: () => buckets.size }
}
