/**
 * Rate limits hold across service processes on one database (src/platform/RateLimit.ts,
 * migration 0252): two instances of the app on the same database share each bucket, so a
 * client cannot multiply its allowance by the number of replicas behind the load balancer.
 * Every answer of a limited endpoint carries `RateLimit-*`, and every answer an `x-request-id`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { testDatabaseName } from "../support/TestDatabase.ts"
import { request } from "./support.ts"

describe("rate limits across processes", () => {
  it.live("two instances on one database share the sign-in nonce limit of one address", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      const config = { RATE_LIMIT_NONCE_PER_MINUTE: "4" }
      const a = Context.get(yield* Layer.build(TestServerLive({ config, database: { name } })), TestServer)
      const b = Context.get(
        yield* Layer.build(TestServerLive({ config, database: { name, create: false } })),
        TestServer
      )
      const nonce = (baseUrl: string) => request(`${baseUrl}/auth/nonce`, { method: "POST" })
      const answers = [yield* nonce(a.baseUrl), yield* nonce(b.baseUrl), yield* nonce(a.baseUrl), yield* nonce(b.baseUrl)]
      assert.deepStrictEqual(answers.map((r) => r.status), [200, 200, 200, 200])
      assert.deepStrictEqual(answers.map((r) => r.headers.get("ratelimit-remaining")), ["3", "2", "1", "0"])
      // The fifth, on either instance, is refused: the bucket is the database's, not the process's.
      for (const baseUrl of [a.baseUrl, b.baseUrl]) {
        const refused = yield* nonce(baseUrl)
        assert.strictEqual(refused.status, 429)
        const retryAfter = Number(refused.headers.get("retry-after"))
        assert.isAtLeast(retryAfter, 1)
        assert.isAtMost(retryAfter, 15)
        assert.strictEqual(refused.headers.get("ratelimit-limit"), "4")
        assert.strictEqual(refused.headers.get("ratelimit-remaining"), "0")
        const id = refused.headers.get("x-request-id")
        assert.match(String(id), /^[0-9a-f]{32}$/)
        assert.strictEqual((refused.json as { error: { requestId: string } }).error.requestId, id)
      }
      // Every answer names its request, successes too.
      for (const r of answers) assert.match(String(r.headers.get("x-request-id")), /^[0-9a-f]{32}$/)
      assert.strictEqual(new Set(answers.map((r) => r.headers.get("x-request-id"))).size, 4)
    }), 120_000)
})
