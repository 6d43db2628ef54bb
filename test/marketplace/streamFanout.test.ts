/**
 * The stats stream's node-level fan-out under abuse, over real loopback HTTP: a
 * reader that never reads, clients vanishing mid-burst, many readers checked
 * change by change, the capacity limit, and an HTTP/1.0 client (no chunking).
 * The poll interval is long, so only `hub.pollNow` polls: every step is explicit.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, type Scope } from "effect"
import * as net from "node:net"
import { StatsHub } from "../../src/marketplace/StatsHub.ts"
import { agentFixture, fakeUpstream, type FakeUpstream, wallet } from "./FakeUpstream.ts"
import { MarketplaceServer, MarketplaceServerLive, openSse, waitFor, waitUntil } from "./server.ts"

const withServer = <A, E>(
  agents: number,
  f: (ctx: { readonly fake: FakeUpstream; readonly baseUrl: string; readonly hub: StatsHub["Service"] }) => Effect.Effect<A, E, Scope.Scope>,
  config: Record<string, string> = {}
) =>
  Effect.scoped(
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      fake.state.agents = Array.from({ length: agents }, (_, i) => agentFixture(i + 1, 1_000_000 - i * 100))
      const context = yield* Layer.build(
        MarketplaceServerLive({
          MARKETPLACE_API_URL: fake.url,
          MARKETPLACE_TIMEOUT: "2 seconds",
          MARKETPLACE_EVALUATOR_WALLET: wallet(0xe7a1),
          MARKETPLACE_STREAM_POLL_INTERVAL: "1 hour",
          MARKETPLACE_STREAM_HEARTBEAT: "1 hour",
          MARKETPLACE_STREAM_LEADERBOARD_SIZE: String(Math.min(agents, 100)),
          ...config
        })
      )
      return yield* f({ fake, baseUrl: Context.get(context, MarketplaceServer).baseUrl, hub: Context.get(context, StatsHub) })
    })
  )

const setVolume = (fake: FakeUpstream, n: number, volume: number) => {
  const agent = fake.state.agents.find((a) => a.walletAddress === wallet(n))!
  ;(agent.metrics as { grossAgenticAmount: number }).grossAgenticAmount = volume
}

/** A client on a bare socket, reading only when told: HTTP/1.1 chunked (or 1.0) decoded, SSE parsed. */
const rawClient = (baseUrl: string, path: string, version: "1.1" | "1.0" = "1.1") => {
  const url = new URL(baseUrl)
  const socket = net.connect(Number(url.port), url.hostname)
  let raw = Buffer.alloc(0)
  let head: string | undefined
  let body = ""
  const events: Array<Record<string, unknown>> = []
  const comments: Array<string> = []
  const parseBody = () => {
    if (version === "1.0") {
      body += raw.toString("utf8")
      raw = Buffer.alloc(0)
    } else {
      while (true) {
        const eol = raw.indexOf("\r\n")
        if (eol < 0) break
        const size = parseInt(raw.subarray(0, eol).toString("latin1"), 16)
        if (raw.length < eol + 2 + size + 2) break
        body += raw.subarray(eol + 2, eol + 2 + size).toString("utf8")
        raw = raw.subarray(eol + 2 + size + 2)
      }
    }
    let i: number
    while ((i = body.indexOf("\n")) >= 0) {
      const line = body.slice(0, i)
      body = body.slice(i + 1)
      if (line.startsWith("data: ")) events.push(JSON.parse(line.slice(6)))
      else if (line.startsWith(":")) comments.push(line.slice(1).trim())
    }
  }
  socket.on("data", (chunk: Buffer) => {
    raw = Buffer.concat([raw, chunk])
    if (head === undefined) {
      const end = raw.indexOf("\r\n\r\n")
      if (end < 0) return
      head = raw.subarray(0, end).toString("latin1")
      raw = raw.subarray(end + 4)
    }
    parseBody()
  })
  socket.on("error", () => {})
  socket.write(`GET ${path} HTTP/${version}\r\nHost: ${url.host}\r\n\r\n`)
  return { socket, events, comments, head: () => head }
}

/** Latest volume per wallet in `events`. */
const latestVolumes = (events: ReadonlyArray<Record<string, unknown>>) => {
  const out = new Map<string, number>()
  for (const e of events) out.set(e.walletAddress as string, e.totalVolumeUsd as number)
  return out
}

describe("stats stream fan-out", () => {
  it.live("a reader that never reads costs bounded memory, then catches up with current values", () =>
    withServer(100, ({ baseUrl, fake, hub }) =>
      Effect.gen(function*() {
        const slow = rawClient(baseUrl, "/marketplace/agents/stream")
        const fast = openSse(`${baseUrl}/marketplace/agents/stream`)
        yield* waitUntil(() => slow.comments.includes("connected"), 2_000, "slow client connected")
        yield* waitUntil(() => fast.comments.includes("connected"), 2_000, "fast client connected")
        slow.socket.pause()
        // Every poll changes all 100 agents (~24 KB of frames) until the slow socket is full.
        let v = 0
        const burst = Effect.gen(function*() {
          v++
          for (let n = 1; n <= 100; n++) setVolume(fake, n, 2_000_000 + v)
          yield* hub.pollNow
        })
        while ((yield* hub.stats).behind === 0) {
          if (v > 3_000) return yield* Effect.die(new Error("the paused socket never filled"))
          yield* burst
        }
        const full = yield* hub.stats
        for (let k = 0; k < 200; k++) yield* burst // ~4.8 MB more that the slow reader cannot take
        const after = yield* hub.stats
        assert.strictEqual(after.behind, 1, "only the paused reader is behind")
        assert.isAtMost(after.heldBack, 100, "at most one held-back stat per wallet")
        assert.isAtMost(after.bufferedBytes, full.bufferedBytes + 64 * 1024, "nothing more is buffered while behind")
        // The fast reader saw every change.
        yield* waitUntil(() => fast.events.filter((e) => e.data.totalVolumeUsd === 2_000_000 + v).length === 100, 5_000, "fast reader")
        // The slow reader resumes: it drains what the kernel held, then gets the coalesced current values.
        slow.socket.resume()
        yield* waitUntil(
          () => [...latestVolumes(slow.events).values()].filter((x) => x === 2_000_000 + v).length === 100,
          10_000,
          "slow reader catches up"
        )
        assert.isBelow(slow.events.length, fast.events.length, "the slow reader skipped superseded values")
        const settled = yield* hub.stats
        assert.strictEqual(settled.behind, 0)
        assert.strictEqual(settled.heldBack, 0)
        // Per wallet, values only move forward even across the skip.
        for (let n = 1; n <= 100; n++) {
          const seq = slow.events.filter((e) => e.walletAddress === wallet(n)).map((e) => e.totalVolumeUsd as number)
          for (let i = 1; i < seq.length; i++) assert.isAbove(seq[i]!, seq[i - 1]!)
        }
        slow.socket.destroy()
        fast.close()
      })
    ), { timeout: 120_000 })

  it.live("clients that vanish mid-burst, even while behind, leave the hub at once", () =>
    withServer(20, ({ baseUrl, fake, hub }) =>
      Effect.gen(function*() {
        const clients = Array.from({ length: 60 }, (_, i) =>
          rawClient(baseUrl, `/marketplace/agents/stream${i % 3 === 0 ? `?wallets=${wallet(3)},${wallet(0xabc)}` : ""}`)
        )
        yield* waitUntil(() => clients.every((c) => c.comments.includes("connected")), 5_000, "clients connected")
        assert.strictEqual((yield* hub.stats).subscribers, 60)
        for (const c of clients.slice(0, 10)) c.socket.pause()
        let v = 0
        for (let k = 0; k < 30; k++) {
          v++
          for (let n = 1; n <= 20; n++) setVolume(fake, n, 3_000_000 + v)
          yield* hub.pollNow
          if (k === 15) for (const c of clients) c.socket.destroy() // half-way through the burst
        }
        yield* waitFor(hub, (stats) => stats.subscribers === 0, "every subscriber to leave")
        const after = yield* hub.stats
        assert.strictEqual(after.subscribers, 0, "every subscriber left")
        assert.strictEqual(after.watchedWallets, 0)
        assert.strictEqual(after.heldBack, 0)
        // The hub still serves newcomers (polls stopped with nobody listening; this one resumes them).
        const late = openSse(`${baseUrl}/marketplace/agents/stream?wallets=${wallet(3)}`)
        yield* waitUntil(() => late.events.length >= 1, 2_000, "a newcomer's snapshot")
        yield* hub.pollNow
        yield* waitUntil(() => late.events.some((e) => e.data.totalVolumeUsd === 3_000_000 + v), 2_000, "the current value")
        late.close()
      })
    ), { timeout: 120_000 })

  it.live("many readers each get every change exactly once, in order per wallet", () =>
    withServer(10, ({ baseUrl, fake, hub }) =>
      Effect.gen(function*() {
        const N = 120
        const named = [wallet(2), wallet(7)]
        const clients = Array.from({ length: N }, (_, i) =>
          openSse(`${baseUrl}/marketplace/agents/stream${i % 2 === 0 ? "" : `?wallets=${named.join(",")}`}`)
        )
        yield* waitUntil(() => clients.every((c) => c.comments.includes("connected")), 5_000, "clients connected")
        // Nothing was polled yet: no snapshot, so every event below is a change.
        const expected = new Map<string, Array<number>>()
        const record = (n: number, volume: number) => {
          setVolume(fake, n, volume)
          expected.set(wallet(n), [...(expected.get(wallet(n)) ?? []), volume])
        }
        for (let n = 1; n <= 10; n++) record(n, 5_000_000 + n) // the first poll: every agent is new
        yield* hub.pollNow
        for (let k = 1; k <= 12; k++) {
          for (let n = 1; n <= 10; n++) if ((n + k) % 3 === 0) record(n, 6_000_000 + k * 100 + n)
          yield* hub.pollNow
        }
        const total = (filterWallets: ReadonlyArray<string> | undefined) =>
          [...expected].filter(([w]) => filterWallets === undefined || filterWallets.includes(w))
            .reduce((a, [, vs]) => a + vs.length, 0)
        yield* waitUntil(
          () => clients.every((c, i) => c.events.length >= total(i % 2 === 0 ? undefined : named)),
          10_000,
          "every change at every reader"
        )
        yield* Effect.sleep("100 millis")
        clients.forEach((c, i) => {
          const follows = i % 2 === 0 ? [...expected.keys()] : named
          for (const w of follows) {
            const got = c.events.filter((e) => e.data.walletAddress === w).map((e) => e.data.totalVolumeUsd)
            assert.deepStrictEqual(got, expected.get(w), `client ${i}, ${w}`)
          }
          assert.strictEqual(c.events.length, total(i % 2 === 0 ? undefined : named), `client ${i}: nothing extra`)
        })
        for (const c of clients) c.close()
      })
    ), { timeout: 120_000 })

  it.live("over capacity a request gets the 503 envelope; a freed slot admits again; HTTP/1.0 reads unchunked", () =>
    withServer(5, ({ baseUrl, hub }) =>
      Effect.gen(function*() {
        const a = openSse(`${baseUrl}/marketplace/agents/stream`)
        const b = rawClient(baseUrl, "/marketplace/agents/stream", "1.0")
        yield* waitUntil(() => a.comments.includes("connected") && b.comments.includes("connected"), 2_000, "two clients")
        assert.match(b.head() ?? "", /^HTTP\/1\.1 200/)
        assert.notMatch(b.head() ?? "", /transfer-encoding/i)
        const refused = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents/stream`))
        assert.strictEqual(refused.status, 503)
        assert.strictEqual((yield* Effect.promise(() => refused.json())).error.code, "service_unavailable")
        yield* hub.pollNow
        yield* waitUntil(() => b.events.length === 5 && a.events.length === 5, 2_000, "both get the first poll")
        a.close()
        yield* waitUntil(() => Effect.runSync(hub.stats).subscribers === 1, 1_000, "a slot freed")
        const c = openSse(`${baseUrl}/marketplace/agents/stream`)
        assert.strictEqual(yield* Effect.promise(() => c.status), 200)
        yield* waitUntil(() => c.events.length === 5, 2_000, "the newcomer's snapshot")
        c.close()
        b.socket.destroy()
      })
    , { MARKETPLACE_STREAM_MAX_SUBSCRIBERS: "2" }))
})
