/**
 * Test wiring: the fake upstream as a service, the launchpad configured against it,
 * and a brute-force reference of what a merged page must be.
 */
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import type { LaunchpadChain } from "../../src/launchpad/Api.ts"
import { LaunchpadLive } from "../../src/launchpad/Launchpad.ts"
import { addressOf, type FakeToken, type FakeUpstream, fakeUpstream } from "./FakeUpstream.ts"

export class Fake extends Context.Service<Fake, FakeUpstream>()("test/launchpad/Fake") {
  static readonly layer = Layer.effect(Fake, fakeUpstream)
}

export const testConfig = (fake: FakeUpstream, overrides: Record<string, string> = {}) =>
  ConfigProvider.layer(ConfigProvider.fromUnknown({
    LAUNCHPAD_API_URL: fake.url,
    LAUNCHPAD_PRICES_URL: fake.url,
    LAUNCHPAD_UPSTREAM_TIMEOUT: "1 second",
    LAUNCHPAD_CACHE_TTL: "1 minute",
    ...overrides
  }))

/** `Launchpad` (real upstream client over fetch) against a fresh fake; `Fake` stays reachable. */
export const launchpadAgainstFake = (overrides: Record<string, string> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const fake = yield* Fake
    return LaunchpadLive.pipe(Layer.provide(FetchHttpClient.layer), Layer.provide(testConfig(fake, overrides)))
  })).pipe(Layer.provideMerge(Fake.layer))

const chainName: Record<FakeToken["chain"], LaunchpadChain> = { BASE: "base", SOLANA: "solana", ROBINHOOD: "robinhood" }
// Written out here rather than imported, so the reference does not share the code it checks.
const chainOrder: Record<LaunchpadChain, number> = { base: 0, robinhood: 1, solana: 2 }

export type Sort = "volume24h" | "mcap" | "age"

/** Brute force: every fixture token, filtered and sorted as the contract says, then cut. */
export const referencePage = (
  tokens: ReadonlyArray<FakeToken>,
  q: { chain: LaunchpadChain | "all"; sort: Sort; page: number; pageSize: number; search?: string }
) => {
  const needle = q.search?.toLowerCase()
  const rows = tokens
    .filter((t) => q.chain === "all" || chainName[t.chain] === q.chain)
    .filter((t) => needle === undefined || t.name.toLowerCase().includes(needle) || t.symbol.toLowerCase().includes(needle))
  const key = (t: FakeToken) =>
    q.sort === "volume24h" ? t.volume24h : q.sort === "mcap" ? t.mcapInVirtual : Date.parse(t.lpCreatedAt)
  rows.sort((a, b) =>
    key(b) - key(a) ||
    chainOrder[chainName[a.chain]] - chainOrder[chainName[b.chain]] ||
    (addressOf(a) < addressOf(b) ? -1 : addressOf(a) > addressOf(b) ? 1 : 0)
  )
  return {
    ids: rows.slice((q.page - 1) * q.pageSize, q.page * q.pageSize).map((t) => `${chainName[t.chain]}:${addressOf(t)}`),
    total: rows.length
  }
}

export const idsOf = (tokens: ReadonlyArray<{ chain: string; tokenAddress: string }>) =>
  tokens.map((t) => `${t.chain}:${t.tokenAddress}`)
