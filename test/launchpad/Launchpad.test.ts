/**
 * The launchpad service against a real HTTP stand-in of the upstream on loopback:
 * mapping, merged sorting and deep paging (against brute force), search, history ranges,
 * single flight, stale-on-error, failure modes and timeouts.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { Launchpad } from "../../src/launchpad/Launchpad.ts"
import { chains } from "../../src/launchpad/Chains.ts"
import { MalformedUpstream, toLaunchpadToken, type UpstreamToken } from "../../src/launchpad/LaunchpadUpstream.ts"
import { addressOf, fakeClose, fixtureCounts, makeFixtures } from "./FakeUpstream.ts"
import { Fake, idsOf, launchpadAgainstFake, referencePage, type Sort } from "./harness.ts"

const sorts: ReadonlyArray<Sort> = ["volume24h", "mcap", "age"]
const totalAll = fixtureCounts.BASE + fixtureCounts.SOLANA + fixtureCounts.ROBINHOOD

describe("Launchpad token mapping", () => {
  it("a creation date beyond year 9999 is a malformed upstream token (502), not a response that fails its schema", () => {
    const raw = makeFixtures()[0]!
    const info = chains.find((c) => c.upstream === raw.chain)!
    const upstream = { ...raw, lpCreatedAt: "+010000-01-01T00:00:00Z" } as unknown as UpstreamToken
    assert.throws(() => toLaunchpadToken(upstream, info), MalformedUpstream)
    assert.match(toLaunchpadToken(raw as unknown as UpstreamToken, info).token.createdAt, /^\d{4}-/)
  })
})

describe("Launchpad tokens", () => {
  layer(launchpadAgainstFake(), { excludeTestServices: true })((it) => {
    it.effect("maps an upstream token into the contract's shape", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        const res = yield* lp.listTokens({ chain: "solana", sort: "mcap", page: 1, pageSize: 5 })
        const first = res.tokens[0]!
        const raw = fake.tokens.find((t) => t.chain === "SOLANA" && addressOf(t) === first.tokenAddress)!
        assert.deepStrictEqual(first, {
          chain: "solana",
          chainId: 101,
          name: raw.name,
          symbol: raw.symbol,
          tokenAddress: addressOf(raw),
          graduationStatus: raw.status === 2 ? "sentient" : "prototype",
          imageUrl: raw.image?.url ?? "",
          priceUsd: raw.priceUsd,
          fdvUsd: raw.fdv,
          priceChange24hPct: raw.priceChangePercent24h,
          sparkline: null,
          volume24hUsd: raw.volume24h,
          liquidityUsd: raw.liquidityUsd,
          holderCount: raw.holderCount,
          createdAt: raw.lpCreatedAt
        })
        assert.strictEqual(res.stale, false)
        // Both statuses occur and map to the two names.
        const all = yield* lp.listTokens({ chain: "base", sort: "age", page: 1, pageSize: 100 })
        assert.deepStrictEqual(new Set(all.tokens.map((t) => t.graduationStatus)), new Set(["prototype", "sentient"]))
        assert.isTrue(all.tokens.every((t) => t.chainId === 8453))
      }))

    it.effect("chain=all pages equal a brute-force merge of the three chains, for every sort, deep pages included", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        for (const sort of sorts) {
          for (const [page, pageSize] of [[1, 30], [2, 30], [5, 7], [6, 100], [9, 60], [18, 30], [19, 30], [540, 1], [1, 100], [30, 17]] as const) {
            const res = yield* lp.listTokens({ chain: "all", sort, page, pageSize })
            const ref = referencePage(fake.tokens, { chain: "all", sort, page, pageSize })
            assert.deepStrictEqual(idsOf(res.tokens), ref.ids, `sort=${sort} page=${page} pageSize=${pageSize}`)
            assert.strictEqual(res.total, totalAll)
            assert.strictEqual(res.page, page)
            assert.strictEqual(res.pageSize, pageSize)
          }
        }
        // The last page is partial, the one after it empty.
        const last = yield* lp.listTokens({ chain: "all", sort: "mcap", page: 6, pageSize: 100 })
        assert.strictEqual(last.tokens.length, totalAll - 500)
        const beyond = yield* lp.listTokens({ chain: "all", sort: "mcap", page: 7, pageSize: 100 })
        assert.strictEqual(beyond.tokens.length, 0)
        assert.strictEqual(beyond.total, totalAll)
      }))

    it.effect("single chains page like the upstream and match brute force", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        for (const chain of ["base", "solana", "robinhood"] as const) {
          for (const sort of sorts) {
            for (const [page, pageSize] of [[1, 30], [3, 50], [2, 100]] as const) {
              const res = yield* lp.listTokens({ chain, sort, page, pageSize })
              const ref = referencePage(fake.tokens, { chain, sort, page, pageSize })
              assert.deepStrictEqual(idsOf(res.tokens), ref.ids, `${chain} ${sort} ${page}/${pageSize}`)
              assert.strictEqual(res.total, ref.total)
            }
          }
        }
      }))

    it.effect("search is a case-insensitive substring on name or symbol, merged and paged correctly", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        for (const search of ["lu", "LU", "Kai", "sent", "zzzz"]) {
          for (const sort of sorts) {
            for (const page of [1, 2]) {
              const res = yield* lp.listTokens({ chain: "all", sort, page, pageSize: 20, search })
              const ref = referencePage(fake.tokens, { chain: "all", sort, page, pageSize: 20, search })
              assert.deepStrictEqual(idsOf(res.tokens), ref.ids, `search=${search} sort=${sort} page=${page}`)
              assert.strictEqual(res.total, ref.total)
            }
          }
        }
        const upper = yield* lp.listTokens({ chain: "base", sort: "mcap", page: 1, pageSize: 50, search: "LUNA" })
        const lower = yield* lp.listTokens({ chain: "base", sort: "mcap", page: 1, pageSize: 50, search: "luna" })
        assert.isAbove(upper.total, 0)
        assert.deepStrictEqual(idsOf(upper.tokens), idsOf(lower.tokens))
        const none = yield* lp.listTokens({ chain: "all", sort: "mcap", page: 1, pageSize: 50, search: "zzzz" })
        assert.strictEqual(none.total, 0)
      }))

    it.effect("a deep chain=all page fetches each chain's top page*pageSize through upstream pages of at most 100", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        fake.reset()
        yield* lp.listTokens({ chain: "all", sort: "volume24h", page: 5, pageSize: 50 })
        // 250 per chain: base 3 pages, solana 2 (170 rows), robinhood 2 (110 rows).
        const sizes = fake.requests.map((r) => Number(r.params.get("pagination[pageSize]")))
        assert.isTrue(sizes.every((s) => s === 100))
        assert.strictEqual(fake.count("/api/virtuals"), 7)
        fake.reset()
        yield* lp.listTokens({ chain: "all", sort: "volume24h", page: 1, pageSize: 10 })
        assert.strictEqual(fake.count("/api/virtuals"), 3)
      }))

    it.effect("refuses bad paging and too-deep merges with BadRequest", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        for (const q of [{ page: 0, pageSize: 30 }, { page: 1, pageSize: 0 }, { page: 1, pageSize: 101 }, { page: 1.5, pageSize: 10 }]) {
          const e = yield* Effect.flip(lp.listTokens({ chain: "base", sort: "mcap", ...q }))
          assert.strictEqual(e._tag, "BadRequest")
        }
        const deep = yield* Effect.flip(lp.listTokens({ chain: "all", sort: "mcap", page: 51, pageSize: 100 }))
        assert.strictEqual(deep._tag, "BadRequest")
        const long = yield* Effect.flip(lp.listTokens({ chain: "all", sort: "mcap", page: 1, pageSize: 1, search: "x".repeat(101) }))
        assert.strictEqual(long._tag, "BadRequest")
      }))
  })
})

describe("Launchpad history", () => {
  layer(launchpadAgainstFake(), { excludeTestServices: true })((it) => {
    it.effect("maps each range to its granularity and window; unknown ranges are 1M", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        const token = fake.tokens.find((t) => t.chain === "BASE" && t.tokenAddress !== null)!
        const address = token.tokenAddress!
        const expected = [
          ["1D", "1D", 300, 86_400_000],
          ["1W", "1W", 3_600, 7 * 86_400_000],
          ["1M", "1M", 14_400, 30 * 86_400_000],
          ["1Y", "1Y", 86_400, 365 * 86_400_000],
          ["5Y", "1M", 14_400, 30 * 86_400_000],
          ["1d", "1M", 14_400, 30 * 86_400_000]
        ] as const
        for (const [asked, range, granularity, window] of expected) {
          fake.reset()
          const h = yield* lp.history("base", address, asked)
          assert.strictEqual(h.range, range)
          assert.strictEqual(h.symbol, token.symbol)
          assert.strictEqual(h.token, address)
          if (asked === "5Y" || asked === "1d") continue // same key as 1M: served from the cache
          const k = fake.requests.find((r) => r.path === "/vp-api/klines")!
          assert.strictEqual(Number(k.params.get("granularity")), granularity)
          assert.strictEqual(k.params.get("chainID"), "0")
          const span = Number(k.params.get("end")) - Number(k.params.get("start"))
          assert.isTrue(span >= window && span <= window + 2 * granularity * 1000, `${asked} span ${span}`)
          assert.isAbove(h.points.length, 0)
          for (let i = 1; i < h.points.length; i++) assert.isTrue(h.points[i]!.t > h.points[i - 1]!.t)
          for (const p of h.points) assert.strictEqual(p.price, fakeClose(address, p.t))
        }
        const none = yield* lp.history("base", address, undefined)
        assert.strictEqual(none.range, "1M")
      }))

    it.effect("ALL starts at the token's creation; Solana and Robinhood use their kline chain ids", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        const sol = fake.tokens.find((t) => t.chain === "SOLANA" && t.tokenAddress !== null)!
        fake.reset()
        const h = yield* lp.history("solana", sol.tokenAddress!, "ALL")
        const k = fake.requests.find((r) => r.path === "/vp-api/klines")!
        assert.strictEqual(k.params.get("chainID"), "1")
        assert.isAtMost(Number(k.params.get("start")), Date.parse(sol.lpCreatedAt))
        assert.strictEqual(h.points[0]!.t >= Date.parse(sol.lpCreatedAt) - 86_400_000, true)
        const rh = fake.tokens.find((t) => t.chain === "ROBINHOOD")!
        fake.reset()
        // EVM addresses are found whatever their case.
        yield* lp.history("robinhood", addressOf(rh).toLowerCase(), "1W")
        assert.strictEqual(fake.requests.find((r) => r.path === "/vp-api/klines")!.params.get("chainID"), "2")
      }))

    it.effect("refuses chain all, bad addresses; an unknown token is NotFound", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        const base = fake.tokens.find((t) => t.chain === "BASE")!
        const all = yield* Effect.flip(lp.history("all", addressOf(base), "1D"))
        assert.strictEqual(all._tag, "BadRequest")
        assert.include(all.message, "not all")
        const bad = yield* Effect.flip(lp.history("base", "0x1234", "1D"))
        assert.strictEqual(bad._tag, "BadRequest")
        const solBad = yield* Effect.flip(lp.history("solana", addressOf(base), "1D"))
        assert.strictEqual(solBad._tag, "BadRequest")
        const missing = yield* Effect.flip(lp.history("base", "0x" + "ab".repeat(20), "1D"))
        assert.strictEqual(missing._tag, "NotFound")
      }))
  })
})

describe("Launchpad cache", () => {
  layer(launchpadAgainstFake({ LAUNCHPAD_CACHE_TTL: "300 millis" }), { excludeTestServices: true })((it) => {
    it.effect("single flight: many concurrent callers, one upstream request per key", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        fake.reset()
        fake.delayMs = 200
        const results = yield* Effect.all(
          Array.from({ length: 25 }, () => lp.listTokens({ chain: "base", sort: "mcap", page: 2, pageSize: 10 })),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(fake.count("/api/virtuals"), 1)
        assert.isTrue(results.every((r) => r.asOf === results[0]!.asOf))
        fake.reset()
        fake.delayMs = 200
        yield* Effect.all(
          Array.from({ length: 25 }, () => lp.listTokens({ chain: "all", sort: "mcap", page: 1, pageSize: 10 })),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(fake.count("/api/virtuals"), 3) // one per chain
        // Fresh within the TTL: no request at all.
        fake.reset()
        yield* lp.listTokens({ chain: "all", sort: "mcap", page: 1, pageSize: 10 })
        assert.strictEqual(fake.count("/api/virtuals"), 0)
        // After the TTL: refreshed.
        yield* Effect.sleep("350 millis")
        const again = yield* lp.listTokens({ chain: "all", sort: "mcap", page: 1, pageSize: 10 })
        assert.strictEqual(fake.count("/api/virtuals"), 3)
        assert.strictEqual(again.stale, false)
      }))

    it.effect("a caller that gives up does not cancel the fetch for the others", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        fake.reset()
        fake.delayMs = 200
        const q = { chain: "solana", sort: "age", page: 3, pageSize: 10 } as const
        const quitter = yield* Effect.forkChild(lp.listTokens(q).pipe(Effect.timeoutOption("50 millis")))
        const stayer = yield* Effect.forkChild(lp.listTokens(q))
        yield* Effect.sleep("20 millis")
        yield* Effect.forkChild(lp.listTokens(q))
        const r = yield* Fiber.join(stayer) // wait for the one that stays
        yield* Fiber.join(quitter)
        assert.strictEqual(r.tokens.length, 10)
        assert.strictEqual(fake.count("/api/virtuals"), 1)
      }))

    it.effect("stale-on-error: after the TTL a failing upstream is answered with the last good page and its asOf", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        fake.reset()
        const q = { chain: "all", sort: "volume24h", page: 2, pageSize: 25 } as const
        const warm = yield* lp.listTokens(q)
        const h0 = yield* lp.history("base", addressOf(fake.tokens[0]!), "1W")
        for (const mode of ["down", "status500", "malformed", "wrongShape", "hang"] as const) {
          yield* Effect.sleep("350 millis")
          fake.mode = mode
          const stale = yield* lp.listTokens(q)
          assert.deepStrictEqual(stale.tokens, warm.tokens, mode)
          assert.strictEqual(stale.asOf, warm.asOf, mode)
          assert.strictEqual(stale.total, warm.total)
          assert.strictEqual(stale.stale, true)
          const h = yield* lp.history("base", addressOf(fake.tokens[0]!), "1W")
          assert.deepStrictEqual(h.points, h0.points)
          assert.strictEqual(h.asOf, h0.asOf)
          fake.mode = "ok"
        }
        // Recovered upstream: fresh again.
        yield* Effect.sleep("350 millis")
        const fresh = yield* lp.listTokens(q)
        assert.strictEqual(fresh.stale, false)
        assert.isTrue(Date.parse(fresh.asOf) > Date.parse(warm.asOf))
      }))

    it.effect("with nothing to serve, failures are envelope errors: 502 kinds and 504 on timeout, within bounded time", () =>
      Effect.gen(function*() {
        const lp = yield* Launchpad
        const fake = yield* Fake
        const cases = [
          ["down", "UpstreamUnavailable"],
          ["status500", "UpstreamUnavailable"],
          ["malformed", "UpstreamUnavailable"],
          ["wrongShape", "UpstreamUnavailable"],
          ["hang", "UpstreamTimeout"]
        ] as const
        let page = 40
        for (const [mode, tag] of cases) {
          fake.reset()
          fake.mode = mode
          const started = Date.now()
          const e = yield* Effect.flip(lp.listTokens({ chain: "all", sort: "age", page: page++, pageSize: 3 }))
          const elapsed = Date.now() - started
          assert.strictEqual(e._tag, tag, mode)
          // 1 s timeout per attempt (test config); transport faults retry quickly.
          assert.isBelow(elapsed, 2500, `${mode} took ${elapsed} ms`)
        }
        // Only transport faults are retried: down → 1 + 2 retries per chain; 500 → once per chain.
        fake.reset()
        fake.mode = "down"
        yield* Effect.flip(lp.listTokens({ chain: "base", sort: "age", page: 99, pageSize: 1 }))
        assert.strictEqual(fake.count("/api/virtuals"), 3)
        fake.reset()
        fake.mode = "status500"
        yield* Effect.flip(lp.listTokens({ chain: "base", sort: "age", page: 98, pageSize: 1 }))
        assert.strictEqual(fake.count("/api/virtuals"), 1)
        fake.reset()
        fake.mode = "hang"
        const h = yield* Effect.flip(lp.history("base", addressOf(fake.tokens[3]!), "1D"))
        assert.strictEqual(h._tag, "UpstreamTimeout")
        fake.reset()
      }))
  })
})
