/** The token bucket itself: bursts up to the limit, continuous refill, honest Retry-After, bounded memory. */
import { assert, describe, it } from "@effect/vitest"
import { Duration } from "effect"
import { makeRateLimiter } from "../../src/platform/RateLimit.ts"

describe("rate limiter", () => {
  it("allows a burst of `limit`, then refuses with the wait until the next token", () => {
    const limiter = makeRateLimiter({ limit: 3, window: Duration.minutes(1) })
    const t0 = 1_000_000
    // What the RateLimit-* headers say: requests left, and seconds until the bucket is full again.
    assert.deepStrictEqual([0, 1, 2].map(() => limiter.take("a", t0)).map((d) => [d.allowed, d.remaining, d.resetSeconds]), [
      [true, 2, 20],
      [true, 1, 40],
      [true, 0, 60]
    ])
    const refused = limiter.take("a", t0)
    assert.deepStrictEqual(refused, { allowed: false, limit: 3, remaining: 0, resetSeconds: 60, retryAfterSeconds: 20 })
    // Another key has its own bucket.
    assert.isTrue(limiter.take("b", t0).allowed)
    // One token comes back every 20 s: not before, and exactly one.
    assert.isFalse(limiter.take("a", t0 + 19_000).allowed)
    assert.isTrue(limiter.take("a", t0 + 20_000).allowed)
    assert.isFalse(limiter.take("a", t0 + 20_000).allowed)
  })

  it("a client keeping to the rate is never refused; 0 turns the rule off", () => {
    const limiter = makeRateLimiter({ limit: 60, window: Duration.minutes(1) })
    for (let i = 0; i < 600; i++) assert.isTrue(limiter.take("steady", i * 1000).allowed)
    const off = makeRateLimiter({ limit: 0, window: Duration.minutes(1) })
    for (let i = 0; i < 100; i++) assert.isTrue(off.take("x", 0).allowed)
  })

  it("idle keys are forgotten, so memory follows the keys active within a window", () => {
    const limiter = makeRateLimiter({ limit: 5, window: Duration.seconds(10) })
    for (let i = 0; i < 5000; i++) limiter.take(`ip-${i}`, 0)
    assert.strictEqual(limiter.size(), 5000)
    // A window later every bucket is full again; the next sweep drops them.
    for (let i = 0; i < 2048; i++) limiter.take("busy", 20_000 + i)
    assert.isAtMost(limiter.size(), 2)
  })
})
