/**
 * The stats stream as the service serves it: the real app on `NodeServer` (its node-level
 * route serves the stream; edge middleware, `/v1` prefix, logging, tracing answer the
 * rest), the node response handed to the hub. Refusals are the app's envelopes with the
 * request's trace id.
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
        const refused = (query: string, status: number, code: string) =>
          Effect.gen(function*() {
            const res = yield* Effect.promise(() => fetch(`${baseUrl}/v1/marketplace/agents/stream${query}`))
            assert.strictEqual(res.status, status, query.slice(0, 80))
            const { error } = yield* Effect.promise(() => res.json())
            assert.strictEqual(error.code, code)
            assert.match(error.requestId, /^[0-9a-f]{32}$/)
          })
        // The one slot is taken.
        yield* refused("", 503, "service_unavailable")
        yield* refused("?wallets=nope", 400, "bad_request")
        yield* refused("?wallets=%00", 400, "bad_request")
        yield* refused(`?wallets=${"a".repeat(9_000)}`, 414, "uri_too_long")
        sse.close()
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({
          config: {
            MARKETPLACE_API_URL: fake.url,
            MARKETPLACE_STREAM_POLL_INTERVAL: "100 millis",
            MARKETPLACE_STREAM_MAX_SUBSCRIBERS: "1"
          }
        })))
      )
    }))
})
