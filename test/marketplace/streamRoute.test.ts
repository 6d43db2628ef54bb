/**
 * The stats stream's node-level route (`NodeServer` + `MarketplaceStreamRoute`) against the
 * HttpApi handler it stands in for: the same stream either way, but on the node route the
 * request's fiber ends once the stream is open (its access line is written at once);
 * malformed queries get the handler's 400 envelope and join nothing; the server's close
 * ends open streams at once instead of waiting for them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Logger, References, Scope } from "effect"
import * as net from "node:net"
import { StatsHub } from "../../src/marketplace/StatsHub.ts"
import { agentFixture, fakeUpstream, type FakeUpstream, wallet } from "./FakeUpstream.ts"
import { MarketplaceServer, MarketplaceServerLive, openSse, waitUntil } from "./server.ts"

interface Line {
  readonly message: unknown
  readonly status: unknown
}

const build = (fake: FakeUpstream, options: { readonly plainServer?: boolean; readonly lines?: Array<Line> } = {}) =>
  Effect.gen(function*() {
    const capture = Logger.make(({ fiber, message }) => {
      const annotations = fiber.getRef(References.CurrentLogAnnotations)
      options.lines?.push({ message: Array.isArray(message) ? message[0] : message, status: annotations["http.status"] })
    })
    const context = yield* Layer.build(
      MarketplaceServerLive({
        MARKETPLACE_API_URL: fake.url,
        MARKETPLACE_STREAM_POLL_INTERVAL: "1 hour",
        MARKETPLACE_STREAM_HEARTBEAT: "1 hour",
        MARKETPLACE_STREAM_LEADERBOARD_SIZE: "3"
      }, { plainServer: options.plainServer === true, accessLog: options.lines !== undefined }).pipe(
        Layer.provide(Logger.layer(options.lines === undefined ? [] : [capture]))
      )
    )
    return { baseUrl: Context.get(context, MarketplaceServer).baseUrl, hub: Context.get(context, StatsHub) }
  })

const withAgents = <A, E>(f: (fake: FakeUpstream) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.scoped(Effect.gen(function*() {
    const fake = yield* fakeUpstream
    fake.state.agents = [agentFixture(1, 3_000), agentFixture(2, 2_000), agentFixture(3, 1_000)]
    return yield* f(fake)
  }))

const sent200 = (lines: ReadonlyArray<Line>) =>
  lines.filter((l) => l.message === "Sent HTTP response" && l.status === 200).length

/** A browser-like client: HTTP/1.1 keep-alive on a bare socket; `ended` when the server closes it. */
const keepAliveClient = (baseUrl: string, path: string) => {
  const url = new URL(baseUrl)
  const socket = net.connect(Number(url.port), url.hostname)
  let text = ""
  const ended = new Promise<void>((resolve) => socket.on("close", () => resolve()))
  socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")))
  socket.on("error", () => {})
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: keep-alive\r\n\r\n`)
  return { ended, text: () => text }
}

describe("stats stream node-level route", () => {
  for (const plainServer of [false, true]) {
    it.live(`${plainServer ? "plain server: the HttpApi handler" : "NodeServer: the node route"} serves the same stream`, () =>
      withAgents((fake) =>
        Effect.gen(function*() {
          const lines: Array<Line> = []
          const { baseUrl, hub } = yield* build(fake, { plainServer, lines })
          const sse = openSse(`${baseUrl}/marketplace/agents/stream?wallets=${wallet(2)}`)
          assert.strictEqual(yield* Effect.promise(() => sse.status), 200)
          yield* waitUntil(() => sse.comments.includes("connected"), 2_000, "connected")
          yield* hub.pollNow
          yield* waitUntil(() => sse.events.length === 1, 2_000, "the first poll")
          const agent = fake.state.agents[1]!
          ;(agent.metrics as { grossAgenticAmount: number }).grossAgenticAmount = 2_500
          yield* hub.pollNow
          yield* waitUntil(() => sse.events.length === 2, 2_000, "the change")
          assert.strictEqual(sse.events[1]!.data.totalVolumeUsd, 2_500)
          if (plainServer) {
            // The handler's fiber stays parked while the stream is open: no access line yet.
            yield* Effect.sleep("100 millis")
            assert.strictEqual(sent200(lines), 0)
          } else {
            // The request is done as soon as the stream is open.
            yield* waitUntil(() => sent200(lines) === 1, 1_000, "the access line while the stream is open")
          }
          sse.close()
          yield* waitUntil(() => Effect.runSync(hub.stats).subscribers === 0, 1_000, "the subscriber left")
        })
      ))
  }

  it.live("malformed `wallets` get the 400 envelope and join nothing", () =>
    withAgents((fake) =>
      Effect.gen(function*() {
        const { baseUrl, hub } = yield* build(fake)
        const stream = `${baseUrl}/marketplace/agents/stream`
        const cases: ReadonlyArray<readonly [string, number, string]> = [
          [`${stream}?wallets=%00`, 400, "bad_request"],
          [`${stream}?wallets=${wallet(1)}%00,${wallet(2)}`, 400, "bad_request"],
          [`${stream}?wallets=${wallet(1)}&wallets=${wallet(2)}`, 400, "bad_request"],
          [`${stream}?wallets=%ED%A0%80`, 400, "bad_request"],
          [`${stream}?wallets=${Array.from({ length: 51 }, (_, i) => wallet(100 + i)).join(",")}`, 400, "bad_request"],
          [`${stream}?wallets=${"0x" + "a".repeat(12_000)}`, 400, "bad_request"],
          // Beyond node's header limit: node's own refusal, as the envelope.
          [`${stream}?wallets=${"a".repeat(100_000)}`, 431, "headers_too_large"]
        ]
        for (const [url, status, code] of cases) {
          const res = yield* Effect.promise(() => fetch(url))
          assert.strictEqual(res.status, status, url.slice(0, 120))
          assert.strictEqual((yield* Effect.promise(() => res.json())).error.code, code)
        }
        const stats = yield* hub.stats
        assert.strictEqual(stats.subscribers, 0)
        assert.strictEqual(stats.watchedWallets, 0)
      })
    ))

  it.live("closing the server ends open streams at once; each client sees the end", () =>
    withAgents((fake) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const { baseUrl, hub } = yield* Scope.provide(build(fake), scope)
        const clients = [
          openSse(`${baseUrl}/marketplace/agents/stream`),
          openSse(`${baseUrl}/marketplace/agents/stream?wallets=${wallet(1)}`)
        ]
        const browser = keepAliveClient(baseUrl, "/marketplace/agents/stream")
        yield* waitUntil(() => clients.every((c) => c.comments.includes("connected")), 2_000, "clients connected")
        yield* waitUntil(() => browser.text().includes(": connected"), 2_000, "keep-alive client connected")
        const started = Date.now()
        yield* Scope.close(scope, Exit.void)
        const took = Date.now() - started
        // Without ending them the server's graceful close waits for open streams (20 s).
        assert.isBelow(took, 2_000)
        yield* Effect.promise(() => Promise.all([...clients.map((c) => c.ended), browser.ended]))
        // The stream's last chunk, then the connection closed (not left to idle out).
        assert.match(browser.text(), /\r\n0\r\n\r\n$/)
        assert.strictEqual((yield* hub.stats).subscribers, 0)
      })
    ), { timeout: 120_000 })

  for (const plainServer of [false, true]) {
    it.live(`${plainServer ? "plain server" : "NodeServer"}: HEAD answers the stream's head at once, and joins nothing`, () =>
      withAgents((fake) =>
        Effect.gen(function*() {
          const { baseUrl, hub } = yield* build(fake, { plainServer })
          for (const path of ["/marketplace/agents/stream", `/marketplace/agents/stream?wallets=${wallet(1)}`]) {
            // A body-less response with the stream open was never flushed: the client waited until it gave up.
            const res = yield* Effect.promise(() => fetch(`${baseUrl}${path}`, { method: "HEAD", signal: AbortSignal.timeout(3_000) }))
            assert.strictEqual(res.status, 200)
            assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/)
          }
          assert.strictEqual((yield* hub.stats).subscribers, 0)
        })
      ), { timeout: 120_000 })
  }
})
