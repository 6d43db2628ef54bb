import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, type Scope } from "effect"
import { StatsHub } from "../../src/marketplace/StatsHub.ts"
import { agentFixture, approve, fakeUpstream, type FakeUpstream, wallet } from "./FakeUpstream.ts"
import { MarketplaceServer, MarketplaceServerLive, openSse, waitFor, waitUntil } from "./server.ts"

const POLL_MS = 150

/** A fake upstream and the marketplace server pointed at it, for one test. */
const withServer = <A, E>(
  f: (
    ctx: { readonly fake: FakeUpstream; readonly baseUrl: string; readonly hub: StatsHub["Service"] }
  ) => Effect.Effect<A, E, Scope.Scope>,
  config: Record<string, string> = {}
) =>
  Effect.scoped(
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      fake.state.agents = Array.from({ length: 20 }, (_, i) => agentFixture(i + 1, 10_000 - i * 100))
      const context = yield* Layer.build(
        MarketplaceServerLive({
          MARKETPLACE_API_URL: fake.url,
          MARKETPLACE_TIMEOUT: "500 millis",
          MARKETPLACE_EVALUATOR_WALLET: wallet(0xe7a1),
          MARKETPLACE_STREAM_POLL_INTERVAL: `${POLL_MS} millis`,
          MARKETPLACE_STREAM_HEARTBEAT: "250 millis",
          MARKETPLACE_STREAM_LEADERBOARD_SIZE: "10",
          ...config
        })
      )
      const { baseUrl } = Context.get(context, MarketplaceServer)
      const hub = Context.get(context, StatsHub)
      return yield* f({ fake, baseUrl, hub })
    })
  )

const setVolume = (fake: FakeUpstream, n: number, volume: number) => {
  const agent = fake.state.agents.find((a) => a.walletAddress === wallet(n))!
  ;(agent.metrics as { grossAgenticAmount: number }).grossAgenticAmount = volume
}

describe("marketplace over HTTP", () => {
  it.live("serves discovery with the session, the envelope without it", () =>
    withServer(({ baseUrl }) =>
      Effect.gen(function*() {
        const me = wallet(0xa11ce)
        const auth = { headers: { authorization: `Bearer ${me}` } }
        const page = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents?limit=5`, auth).then((r) => r.json()))
        assert.strictEqual(page.agents.length, 5)
        assert.strictEqual(page.total, 20)
        assert.notStrictEqual(page.nextCursor, "")
        const next = yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/agents?limit=5&cursor=${page.nextCursor}`, auth).then((r) => r.json())
        )
        assert.strictEqual(next.agents[0].walletAddress, wallet(6))
        const unauth = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents`))
        assert.strictEqual(unauth.status, 401)
        const tooBig = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents?limit=101`, auth))
        assert.strictEqual(tooBig.status, 400)
        const evaluator = yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/agents/evaluator`, auth).then((r) => r.json())
        )
        assert.deepStrictEqual(evaluator, { connected: true, wallet: wallet(0xe7a1) })
        const agent = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents/${wallet(3)}`, auth).then((r) => r.json()))
        assert.strictEqual(agent.name, "Agent 3")
        const byName = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents/Agent%203`, auth))
        assert.strictEqual(byName.status, 400, "a name is never an identity")
        const noQuery = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents/search`, auth))
        assert.strictEqual(noQuery.status, 400)
        const hire = yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/agents/hire/build`, {
            method: "POST",
            headers: { ...auth.headers, "content-type": "application/json" },
            body: JSON.stringify({ agentWallet: wallet(3), chainId: 8453, perJobBudget: 5, delegateeAddress: wallet(9) })
          })
        )
        // The proxy alone serves no operation build: hiring is its own group, served only with the chains (test/hiring/).
        assert.oneOf(hire.status, [404, 405])
      })
    ))

  it.live("jobs and the managed connect flow act for the session's signer", () =>
    withServer(({ baseUrl, fake }) =>
      Effect.gen(function*() {
        const me = wallet(0xa11ce)
        const auth = { headers: { authorization: `Bearer ${me}` } }
        const job = (id: number, client: string) => ({
          onChainJobId: id,
          chainId: 8453,
          phase: 0,
          clientAddress: client,
          providerAddress: wallet(1),
          price: 3,
          createdAt: `2026-03-0${id}T00:00:00Z`
        })
        fake.state.jobs = [job(1, me), job(2, wallet(0xbad)), job(3, me)]
        fake.state.leakyJobs = true
        const jobs = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/jobs`, auth).then((r) => r.json()))
        assert.deepStrictEqual(jobs.map((j: { jobId: string }) => j.jobId), ["3", "1"])
        assert.strictEqual(jobs[0].status, "requested")
        const theirs = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/jobs/8453/2`, auth))
        assert.strictEqual(theirs.status, 404)
        const mine = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/jobs/8453/1`, auth).then((r) => r.json()))
        assert.strictEqual(mine.jobId, "1")
        const start = yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/managed/connect`, { ...auth, method: "POST" }).then((r) => r.json())
        )
        assert.isFalse(start.alreadyConnected)
        approve(fake.state, start.requestId, wallet(0x3a3a))
        const status = yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/managed/connect/status?requestId=${start.requestId}`, auth).then((r) => r.json())
        )
        assert.deepStrictEqual(status, { connected: true, walletAddress: wallet(0x3a3a) })
        const other = yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/managed/connection`, { headers: { authorization: `Bearer ${wallet(0xbad)}` } })
            .then((r) => r.json())
        )
        assert.deepStrictEqual(other, { connected: false })
      })
    ))

  it.live("an upstream failure reaches the client as the envelope (502/504)", () =>
    withServer(({ baseUrl, fake }) =>
      Effect.gen(function*() {
        const auth = { headers: { authorization: `Bearer ${wallet(0xa11ce)}` } }
        fake.state.mode = "500"
        const r500 = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents`, auth))
        assert.strictEqual(r500.status, 502)
        const body = yield* Effect.promise(() => r500.json())
        assert.strictEqual(body.error.code, "upstream_unavailable")
        fake.state.mode = "slow"
        const started = Date.now()
        const slow = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents/search?query=x`, auth))
        assert.strictEqual(slow.status, 504)
        assert.strictEqual((yield* Effect.promise(() => slow.json())).error.code, "upstream_timeout")
        assert.isBelow(Date.now() - started, 2_000)
      })
    ))
})

describe("live stats stream", () => {
  it.live("is public SSE: snapshot, then only changes, heartbeats while idle", () =>
    withServer(({ baseUrl, fake }) =>
      Effect.gen(function*() {
        // Someone has to be listening for the poller to run; the first poll seeds the cache.
        const first = openSse(`${baseUrl}/marketplace/agents/stream?wallets=${wallet(2)},${wallet(15)}`)
        assert.strictEqual(yield* Effect.promise(() => first.status), 200)
        const headers = yield* Effect.promise(() => first.headers)
        assert.match(String(headers["content-type"]), /^text\/event-stream/)
        yield* waitUntil(() => first.events.length >= 2, 2_000, "initial stats")
        // wallet 15 is outside the leaderboard window (size 10): fetched by wallet.
        assert.deepStrictEqual(new Set(first.events.map((e) => e.data.walletAddress)), new Set([wallet(2), wallet(15)]))
        const stat = first.events.find((e) => e.data.walletAddress === wallet(2))!.data
        assert.deepStrictEqual(Object.keys(stat).sort(), [
          "asOf",
          "pricePerJobUsd",
          "rating",
          "successRate",
          "totalJobs",
          "totalVolumeUsd",
          "walletAddress"
        ])
        // Nothing changes: no new events for several polls, but heartbeats.
        const before = first.events.length
        yield* Effect.sleep(`${POLL_MS * 4} millis`)
        assert.strictEqual(first.events.length, before, "no event without a change")
        assert.include(first.comments, "heartbeat")
        // A change upstream reaches the subscriber, once.
        setVolume(fake, 2, 123_456)
        yield* waitUntil(() => first.events.some((e) => e.data.totalVolumeUsd === 123_456), 2_000, "the change")
        yield* Effect.sleep(`${POLL_MS * 3} millis`)
        assert.strictEqual(first.events.filter((e) => e.data.totalVolumeUsd === 123_456).length, 1)
        // A late subscriber gets the latest values straight away.
        const late = openSse(`${baseUrl}/marketplace/agents/stream?wallets=${wallet(2)}`)
        yield* waitUntil(() => late.events.length >= 1, 1_000, "snapshot")
        assert.strictEqual(late.events[0]!.data.totalVolumeUsd, 123_456)
        first.close()
        late.close()
      })
    ))

  it.live("without `wallets` follows the leaderboard; bad wallets are a 400", () =>
    withServer(({ baseUrl }) =>
      Effect.gen(function*() {
        const all = openSse(`${baseUrl}/marketplace/agents/stream`)
        yield* waitUntil(() => all.events.length >= 10, 2_000, "leaderboard stats")
        assert.strictEqual(new Set(all.events.map((e) => e.data.walletAddress)).size, 10)
        all.close()
        const bad = yield* Effect.promise(() => fetch(`${baseUrl}/marketplace/agents/stream?wallets=Agent%201`))
        assert.strictEqual(bad.status, 400)
        assert.strictEqual((yield* Effect.promise(() => bad.json())).error.code, "bad_request")
      })
    ))

  it.live("many subscribers share one poll, all get the change, and leave at once on disconnect", () =>
    withServer(({ baseUrl, fake, hub }) =>
      Effect.gen(function*() {
        const N = 200
        const clients = Array.from({ length: N }, (_, i) =>
          openSse(`${baseUrl}/marketplace/agents/stream${i % 2 === 0 ? "" : `?wallets=${wallet(1)}`}`)
        )
        yield* waitUntil(() => clients.every((c) => c.events.length >= 1), 5_000, "every subscriber's first event")
        assert.strictEqual((yield* hub.stats).subscribers, N)
        // Upstream requests per poll stay one, whatever N.
        const polls0 = (yield* hub.stats).polls
        const requests0 = fake.count("/agents")
        yield* waitFor(hub, (stats) => stats.polls - polls0 >= 3, "three polls")
        // A poll counts itself, then asks: its request may still be on its way when the count is read.
        const polls = (yield* hub.stats).polls - polls0
        yield* waitUntil(() => fake.count("/agents") - requests0 >= polls, 5_000, "every poll's request")
        const requests = fake.count("/agents") - requests0
        const pollsAfter = (yield* hub.stats).polls - polls0
        assert.isAtMost(requests, pollsAfter, "one leaderboard request per poll, never more")
        assert.strictEqual(fake.count(/^\/agents\/wallet\//), 0, "wallet 1 is in the leaderboard: no extra request")
        setVolume(fake, 1, 999_999)
        yield* waitUntil(
          () => clients.every((c) => c.events.some((e) => e.data.totalVolumeUsd === 999_999)),
          3_000,
          "every subscriber sees the change"
        )
        for (const c of clients) c.close()
        yield* waitFor(hub, (stats) => stats.subscribers === 0, "every subscriber to leave")
        const after = yield* hub.stats
        assert.strictEqual(after.subscribers, 0, "disconnected clients are cleaned up")
        assert.strictEqual(after.watchedWallets, 0)
        // Nobody listens: the poller stops asking the upstream.
        const idle0 = fake.count("/agents")
        yield* Effect.sleep(`${POLL_MS * 3} millis`)
        assert.strictEqual(fake.count("/agents"), idle0)
      })
    ), { timeout: 120_000 })

  it.live("a subscriber that does not read holds at most one pending stat per wallet", () =>
    (
      withServer(({ fake, hub }) =>
        Effect.gen(function*() {
          const sub = yield* hub.subscribe({ _tag: "Wallets", wallets: [wallet(1) as never] })
          for (let v = 1; v <= 20; v++) {
            setVolume(fake, 1, 50_000 + v)
            yield* hub.pollNow
          }
          const batch = yield* sub.take
          assert.strictEqual(batch.stats.length, 1, "coalesced to the latest")
          assert.strictEqual(batch.stats[0]!.totalVolumeUsd, 50_020)
        })
      )
    ))
})
