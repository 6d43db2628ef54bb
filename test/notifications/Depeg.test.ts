/**
 * The depeg monitor against a price source on loopback whose price the test moves:
 * one alert per excursion and one on its return, however many polls; the state
 * survives a restart; two processes polling one database alert once.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { DepegMonitor, deviationBps, parseTokens, transition } from "../../src/notifications/DepegMonitor.ts"
import { Notifications } from "../../src/notifications/Notifications.ts"
import { PriceFeed } from "../../src/notifications/PriceFeed.ts"
import { insertAccount } from "../audit/support.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { databaseUrl, TestDatabaseLive, testDatabaseName } from "../support/TestDatabase.ts"
import { eventually, polls, PriceServer } from "./PriceServer.ts"

describe("depeg rules", () => {
  it("one transition per excursion, with a recovery band", () => {
    assert.strictEqual(Math.round(deviationBps(0.985)), 150)
    assert.strictEqual(transition(false, 0.9995, 100, 50), "none")
    assert.strictEqual(transition(false, 0.985, 100, 50), "enter")
    assert.strictEqual(transition(false, 1.02, 100, 50), "enter")
    assert.strictEqual(transition(true, 0.985, 100, 50), "none")
    // Back inside the threshold but not yet inside the recovery band: still one excursion.
    assert.strictEqual(transition(true, 0.993, 100, 50), "none")
    assert.strictEqual(transition(true, 0.996, 100, 50), "exit")
    assert.strictEqual(transition(false, 0.996, 100, 50), "none")
    assert.deepStrictEqual(parseTokens("usd-coin:USDC, tether:USDT,dai"), [
      { id: "usd-coin", symbol: "USDC" },
      { id: "tether", symbol: "USDT" },
      { id: "dai", symbol: "DAI" }
    ])
  })
})

// ---------------------------------------------------------------------------
// End to end: the app as served, its monitor configured at the loopback source.
// ---------------------------------------------------------------------------

const AppWithPrices = Layer.unwrap(
  Effect.map(Effect.service(PriceServer), (prices) =>
    TestServerLive({
      config: {
        PRICE_SOURCE_URL: prices.url,
        PRICE_SOURCE_API_KEY: "demo-key",
        DEPEG_TOKENS: "usd-coin:USDC,tether:USDT",
        DEPEG_THRESHOLD_BPS: "100",
        DEPEG_POLL_INTERVAL: "40 millis"
      }
    }))
).pipe(Layer.provideMerge(PriceServer.layer()))

const depegOf = <N extends { readonly relatedType?: string | null | undefined }>(list: ReadonlyArray<N>) =>
  list.filter((n) => n.relatedType === "depeg")

layer(AppWithPrices, { excludeTestServices: true })("depeg monitor in the served app", (it) => {
  it.effect("a moved price raises exactly one alert per signer, and one when it returns", () =>
    Effect.gen(function*() {
      const prices = yield* PriceServer
      const { baseUrl } = yield* TestServer
      const alice = yield* client((yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))).token)
      const bob = yield* client((yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))).token)
      const depegs = (api: typeof alice) =>
        Effect.map(api.notifications.list({ query: { unreadOnly: false } }), depegOf).pipe(Effect.orDie)

      // On peg: polls happen, nothing is raised.
      yield* polls(prices, 3)
      assert.deepStrictEqual(yield* depegs(alice), [])
      assert.strictEqual(prices.lastHeaders()["x-cg-demo-api-key"], "demo-key")

      prices.setPrice("usd-coin", 0.97)
      const [alert] = yield* eventually("the depeg alert", depegs(alice), (l) => l.length === 1)
      assert.strictEqual(alert!.title, "USDC depeg")
      assert.include(alert!.body, "$0.9700")
      assert.include(alert!.body, "300 bps below")
      // Many more polls while it stays off peg: still one alert each.
      yield* polls(prices, 8)
      assert.strictEqual((yield* depegs(alice)).length, 1)
      assert.strictEqual((yield* depegs(bob)).length, 1)
      assert.strictEqual((yield* depegs(bob))[0]!.relatedId, alert!.relatedId)

      prices.setPrice("usd-coin", 1.0001)
      const back = yield* eventually("the recovery alert", depegs(alice), (l) => l.length === 2)
      assert.strictEqual(back[0]!.title, "USDC back on peg")
      assert.strictEqual(back[0]!.relatedId, alert!.relatedId)
      yield* polls(prices, 8)
      assert.strictEqual((yield* depegs(alice)).length, 2)
      assert.strictEqual((yield* depegs(bob)).length, 2)

      // A new excursion is a new alert with a new id.
      prices.setPrice("tether", 1.03)
      const third = yield* eventually("the second excursion", depegs(bob), (l) => l.length === 3)
      assert.strictEqual(third[0]!.title, "USDT depeg")
      assert.notStrictEqual(third[0]!.relatedId, alert!.relatedId)
      prices.setPrice("tether", 1)
      yield* eventually("the second recovery", depegs(bob), (l) => l.length === 4)
    }))
})

// ---------------------------------------------------------------------------
// Restarts and two processes: each "process" is its own monitor with its own pool.
// ---------------------------------------------------------------------------

const dbName = testDatabaseName()

const processLayer = (priceUrl: string, tokens = "usd-coin:USDC", interval = "15 millis") =>
  DepegMonitor.layer.pipe(
    Layer.provide(PriceFeed.layer),
    Layer.provide(Notifications.layer),
    Layer.provide(PgClient.layer({ url: Redacted.make(databaseUrl(dbName)), maxConnections: 3 })),
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({
      PRICE_SOURCE_URL: priceUrl,
      DEPEG_TOKENS: tokens,
      DEPEG_THRESHOLD_BPS: "100",
      DEPEG_POLL_INTERVAL: interval
    })))
  )

/** Runs `n` monitor processes side by side while `body` runs, then stops them. */
const withProcesses = <A, E, R>(n: number, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const prices = yield* PriceServer
    return yield* Effect.scoped(
      Effect.gen(function*() {
        for (let i = 0; i < n; i++) yield* Layer.build(processLayer(prices.url))
        return yield* body
      })
    )
  })

const depegRows = rowsAbout("USDC")

function rowsAbout(symbol: string) {
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ signer_address: string; title: string; related_id: string }>`
      SELECT signer_address, title, related_id FROM notifications
      WHERE related_type = 'depeg' AND title LIKE ${symbol + " %"} ORDER BY created_at, id`
  }).pipe(Effect.orDie)
}

const Processes = Layer.mergeAll(TestDatabaseLive({ name: dbName }), PriceServer.layer({ "usd-coin": 1 }))

layer(Processes, { excludeTestServices: true })("depeg monitor across restarts and processes", (it) => {
  it.effect("two processes alert once; a restarted process resumes the excursion instead of alerting again", () =>
    Effect.gen(function*() {
      const prices = yield* PriceServer
      const alice = yield* insertAccount()
      const bob = yield* insertAccount()
      void alice
      void bob

      // Two processes on peg, then the price moves while both poll.
      yield* withProcesses(2, Effect.gen(function*() {
        yield* polls(prices, 4)
        assert.deepStrictEqual(yield* depegRows, [])
        prices.setPrice("usd-coin", 0.95)
        yield* eventually("the alert", depegRows, (r) => r.length >= 2)
        yield* polls(prices, 20)
      }))
      const afterFirst = yield* depegRows
      assert.strictEqual(afterFirst.length, 2, "one alert for each of the two signers, from one process")
      assert.strictEqual(new Set(afterFirst.map((r) => r.signer_address)).size, 2)
      assert.strictEqual(new Set(afterFirst.map((r) => r.related_id)).size, 1)

      // Both stopped; a process starts while the price is still off peg: nothing new.
      yield* withProcesses(1, polls(prices, 10))
      assert.strictEqual((yield* depegRows).length, 2)

      // The price source fails for a while: no alert, no crash, polling goes on.
      prices.setFailing(true)
      yield* withProcesses(2, Effect.gen(function*() {
        yield* polls(prices, 6)
        assert.strictEqual((yield* depegRows).length, 2)
        prices.setFailing(false)
        prices.setPrice("usd-coin", 1)
        // The return, seen by two processes again: one recovery alert per signer.
        yield* eventually("the recovery", depegRows, (r) => r.length >= 4)
        yield* polls(prices, 20)
      }))
      const rows = yield* depegRows
      assert.strictEqual(rows.length, 4)
      assert.deepStrictEqual(rows.slice(2).map((r) => r.title), ["USDC back on peg", "USDC back on peg"])
      assert.strictEqual(rows[3]!.related_id, rows[0]!.related_id)
    }))

  it.effect("a price at or below zero from the source is no price: skipped, never a depeg alert to everyone", () =>
    Effect.gen(function*() {
      const prices = yield* PriceServer
      prices.setPrice("dai", 0)
      prices.setPrice("frax", -1)
      const fired = yield* Effect.scoped(Effect.gen(function*() {
        const p = Context.get(yield* Layer.build(processLayer(prices.url, "dai:DAI,frax:FRAX", "1 hour")), DepegMonitor)
        return yield* p.check
      }))
      assert.deepStrictEqual(fired, [])
      assert.deepStrictEqual(yield* rowsAbout("DAI"), [])
      assert.deepStrictEqual(yield* rowsAbout("FRAX"), [])
    }))

  it.effect("checks racing in two processes move the state once", () =>
    Effect.gen(function*() {
      const prices = yield* PriceServer
      prices.setPrice("tether", 1)
      yield* Effect.scoped(Effect.gen(function*() {
        // Background polling slowed right down: the rounds below are driven by hand, all at once.
        const p1 = Context.get(yield* Layer.build(processLayer(prices.url, "tether:USDT", "1 hour")), DepegMonitor)
        const p2 = Context.get(yield* Layer.build(processLayer(prices.url, "tether:USDT", "1 hour")), DepegMonitor)
        const race = Effect.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? p1 : p2).check), { concurrency: "unbounded" })
        prices.setPrice("tether", 0.9)
        const entered = (yield* race).flat()
        assert.deepStrictEqual(entered.map((f) => f.kind), ["enter"])
        assert.deepStrictEqual((yield* race).flat(), [])
        prices.setPrice("tether", 1)
        const exited = (yield* race).flat()
        assert.deepStrictEqual(exited.map((f) => f.kind), ["exit"])
        assert.strictEqual(exited[0]!.excursionId, entered[0]!.excursionId)
      }))
      const sql = yield* SqlClient.SqlClient
      const [{ n }] = yield* sql<{ n: number }>`SELECT count(DISTINCT signer_address)::int AS n FROM accounts`.pipe(Effect.orDie) as unknown as Effect.Effect<[{ n: number }]>
      assert.isAtLeast(n, 2)
      // One depeg and one recovery alert per signer.
      assert.strictEqual((yield* rowsAbout("USDT")).length, 2 * n)
    }))
})
