/**
 * The stats stream as the service serves it: the real app (edge middleware, `/v1`
 * prefix, logging, tracing) handing the node response to the hub.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { agentFixture, fakeUpstream, wallet } from "./FakeUpstream.ts"
import { openSse, waitUntil } from "./server.ts"

describe("stats stream in the app", () => {
  it.live("streams under /v1 through the edge; refusals are envelopes", () =>
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      fake.state.agents = [agentFixture(1, 1_000), agentFixture(2, 900)]
      yield* Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const sse = openSse(`${baseUrl}/v1/marketplace/agents/stream?wallets=${wallet(2)}`)
        assert.strictEqual(yield* Effect.promise(() => sse.status), 200)
        const headers = yield* Effect.promise(() => sse.headers)
        assert.match(String(headers["content-type"]), /^text\/event-stream/)
        assert.strictEqual(headers["cache-control"], "no-cache, no-transform")
        yield* waitUntil(() => sse.events.length >= 1, 5_000, "the first poll's stat")
        assert.strictEqual(sse.events[0]!.data.walletAddress, wallet(2))
        assert.include(sse.comments, "connected")
        sse.close()
        const bad = yield* Effect.promise(() => fetch(`${baseUrl}/v1/marketplace/agents/stream?wallets=nope`))
        assert.strictEqual(bad.status, 400)
        assert.strictEqual((yield* Effect.promise(() => bad.json())).error.code, "bad_request")
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({
          config: { MARKETPLACE_API_URL: fake.url, MARKETPLACE_STREAM_POLL_INTERVAL: "100 millis" }
        })))
      )
    }))
})
