/**
 * The launchpad endpoints through a real HTTP server on loopback (the lead's envelope
 * middlewares included), over the fake upstream: defaults, each parameter's bounds and
 * bad values (400 envelopes), history ranges and refusals, upstream failures as 502/504
 * envelopes, and a dead upstream after a warm cache still answering.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { addressOf, fixtureCounts } from "./FakeUpstream.ts"
import { Fake, idsOf, referencePage } from "./harness.ts"
import { launchpadServer, LaunchpadServer } from "./server.ts"

interface Reply {
  readonly status: number
  readonly body: any
}

const get = (path: string) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* LaunchpadServer
    return yield* Effect.promise(async (): Promise<Reply> => {
      const res = await fetch(`${baseUrl}${path}`)
      const text = await res.text()
      return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
    })
  })

const assertEnvelope = (r: Reply, status: number, code: string, what: string) => {
  assert.strictEqual(r.status, status, `${what}: ${JSON.stringify(r.body)}`)
  assert.strictEqual(r.body?.error?.code, code, what)
  assert.isString(r.body.error.message, what)
}

const isoPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

describe("GET /launchpad/tokens", () => {
  layer(launchpadServer({ LAUNCHPAD_CACHE_TTL: "300 millis" }), { excludeTestServices: true })((it) => {
    it.effect("defaults: base, volume24h, page 1, pageSize 30, with asOf", () =>
      Effect.gen(function*() {
        const fake = yield* Fake
        const r = yield* get("/launchpad/tokens")
        assert.strictEqual(r.status, 200)
        assert.strictEqual(r.body.page, 1)
        assert.strictEqual(r.body.pageSize, 30)
        assert.strictEqual(r.body.total, fixtureCounts.BASE)
        assert.match(r.body.asOf, isoPattern)
        const ref = referencePage(fake.tokens, { chain: "base", sort: "volume24h", page: 1, pageSize: 30 })
        assert.deepStrictEqual(idsOf(r.body.tokens), ref.ids)
        const t = r.body.tokens[0]
        for (const k of ["chain", "chainId", "name", "symbol", "tokenAddress", "graduationStatus", "imageUrl", "priceUsd", "fdvUsd", "priceChange24hPct", "sparkline", "volume24hUsd", "liquidityUsd", "holderCount", "createdAt"]) {
          assert.isTrue(k in t, k)
        }
      }))

    it.effect("chain=all deep pages and search through HTTP match brute force", () =>
      Effect.gen(function*() {
        const fake = yield* Fake
        for (const [sort, page, pageSize, search] of [["mcap", 11, 47, undefined], ["age", 3, 100, undefined], ["volume24h", 2, 5, "Ai"]] as const) {
          const qs = `chain=all&sort=${sort}&page=${page}&pageSize=${pageSize}${search ? `&search=${search}` : ""}`
          const r = yield* get(`/launchpad/tokens?${qs}`)
          assert.strictEqual(r.status, 200, qs)
          const ref = referencePage(fake.tokens, { chain: "all", sort, page, pageSize, ...(search ? { search } : {}) })
          assert.deepStrictEqual(idsOf(r.body.tokens), ref.ids, qs)
          assert.strictEqual(r.body.total, ref.total, qs)
        }
      }))

    it.effect("accepts every parameter at its bounds", () =>
      Effect.gen(function*() {
        for (const qs of ["page=1&pageSize=1", "pageSize=100", "page=1000&pageSize=100", "chain=solana&sort=mcap", "chain=robinhood&sort=age", "chain=all&page=50&pageSize=100", "search=", "search=%20lu%20", `search=${"a".repeat(100)}`]) {
          const r = yield* get(`/launchpad/tokens?${qs}`)
          assert.strictEqual(r.status, 200, `${qs}: ${JSON.stringify(r.body)}`)
        }
        const empty = yield* get("/launchpad/tokens?page=1000&pageSize=100")
        assert.deepStrictEqual(empty.body.tokens, [])
        assert.strictEqual(empty.body.total, fixtureCounts.BASE)
      }))

    it.effect("answers bad values with 400 envelopes", () =>
      Effect.gen(function*() {
        for (const qs of [
          "chain=eth", "chain=BASE", "chain=", "sort=price", "sort=", "page=0", "page=-1", "page=abc", "page=1.5", "page=",
          "pageSize=0", "pageSize=101", "pageSize=x", "pageSize=2.5", `search=${"a".repeat(101)}`,
          "chain=all&page=51&pageSize=100"
        ]) {
          const r = yield* get(`/launchpad/tokens?${qs}`)
          assertEnvelope(r, 400, "bad_request", qs)
        }
      }))

    it.effect("upstream failures with nothing cached are 502/504 envelopes; a warm cache outlives a dead upstream", () =>
      Effect.gen(function*() {
        const fake = yield* Fake
        fake.reset()
        fake.mode = "status500"
        assertEnvelope(yield* get("/launchpad/tokens?chain=all&page=4"), 502, "upstream_unavailable", "500")
        fake.mode = "malformed"
        assertEnvelope(yield* get("/launchpad/tokens?chain=all&page=5"), 502, "upstream_unavailable", "malformed")
        fake.mode = "down"
        assertEnvelope(yield* get("/launchpad/tokens?chain=all&page=6"), 502, "upstream_unavailable", "down")
        fake.mode = "hang"
        assertEnvelope(yield* get("/launchpad/tokens?chain=all&page=7"), 504, "upstream_timeout", "hang")
        fake.reset()
        const warm = yield* get("/launchpad/tokens?chain=all&sort=mcap&page=3&pageSize=20")
        assert.strictEqual(warm.status, 200)
        yield* Effect.sleep("350 millis")
        fake.mode = "down"
        const stale = yield* get("/launchpad/tokens?chain=all&sort=mcap&page=3&pageSize=20")
        assert.strictEqual(stale.status, 200)
        assert.deepStrictEqual(stale.body, warm.body)
        fake.reset()
      }))
  })
})

describe("GET /launchpad/tokens/{chain}/{address}/history", () => {
  layer(launchpadServer(), { excludeTestServices: true })((it) => {
    it.effect("answers PriceHistory for each range; unknown ranges are 1M", () =>
      Effect.gen(function*() {
        const fake = yield* Fake
        const token = fake.tokens.find((t) => t.chain === "ROBINHOOD")!
        const address = addressOf(token)
        for (const [asked, range] of [["", "1M"], ["?range=1D", "1D"], ["?range=1W", "1W"], ["?range=1M", "1M"], ["?range=1Y", "1Y"], ["?range=ALL", "ALL"], ["?range=bogus", "1M"], ["?range=", "1M"]] as const) {
          const r = yield* get(`/launchpad/tokens/robinhood/${address}/history${asked}`)
          assert.strictEqual(r.status, 200, `${asked}: ${JSON.stringify(r.body)}`)
          assert.strictEqual(r.body.range, range)
          assert.strictEqual(r.body.symbol, token.symbol)
          assert.strictEqual(r.body.token, address)
          assert.match(r.body.asOf, isoPattern)
          assert.isArray(r.body.points)
          assert.isAbove(r.body.points.length, 0, asked)
          assert.isTrue(r.body.points.every((p: any) => Number.isInteger(p.t) && typeof p.price === "number"))
        }
      }))

    it.effect("refuses chain all, unknown chains and bad addresses with 400; unknown tokens 404", () =>
      Effect.gen(function*() {
        const fake = yield* Fake
        const base = addressOf(fake.tokens.find((t) => t.chain === "BASE")!)
        assertEnvelope(yield* get(`/launchpad/tokens/all/${base}/history`), 400, "bad_request", "all")
        assertEnvelope(yield* get(`/launchpad/tokens/eth/${base}/history`), 400, "bad_request", "eth")
        assertEnvelope(yield* get(`/launchpad/tokens/base/0xnothex/history`), 400, "bad_request", "bad address")
        assertEnvelope(yield* get(`/launchpad/tokens/solana/${base}/history`), 400, "bad_request", "evm address on solana")
        assertEnvelope(yield* get(`/launchpad/tokens/base/${"0x" + "cd".repeat(20)}/history`), 404, "not_found", "unknown")
        fake.mode = "hang"
        assertEnvelope(yield* get(`/launchpad/tokens/base/${base}/history?range=1D`), 504, "upstream_timeout", "hang")
        fake.reset()
      }))
  })
})
