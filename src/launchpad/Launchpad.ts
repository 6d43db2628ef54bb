/**
 * The launchpad service the handlers call: token lists (one chain, or `all` merged across
 * chains), price history, both behind the per-query cache (see QueryCache.ts).
 */
import { Clock, Config, Context, Duration, Effect, Layer } from "effect"
import { BadRequest, NotFound, UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import type { LaunchpadChain, LaunchpadToken, PriceHistory } from "./Api.ts"
import { chains, isValidAddress } from "./Chains.ts"
import {
  LaunchpadUpstream,
  LaunchpadUpstreamLive,
  type TokenRow,
  type TokenSort,
  type UpstreamError
} from "./LaunchpadUpstream.ts"
import { historyWindow, mergePage, parseRange, upstreamPlan } from "./Merge.ts"
import { type Cached, makeQueryCache } from "./QueryCache.ts"

export interface TokensRequest {
  readonly chain: LaunchpadChain | "all"
  readonly sort: TokenSort
  readonly page: number
  readonly pageSize: number
  readonly search?: string | undefined
}

export interface TokensResult {
  readonly tokens: ReadonlyArray<LaunchpadToken>
  readonly page: number
  readonly pageSize: number
  readonly total: number
  /** When the upstream produced this answer (ISO); older than the TTL means it is a stale answer. */
  readonly asOf: string
  /**
   * The cache fill this page was cut from: the same object for every hit until the next
   * refresh, so the HTTP layer can encode the page once per fill and serve the bytes.
   */
  readonly source: object
  readonly stale: boolean
}

export interface HistoryResult extends PriceHistory {
  readonly stale: boolean
}

export class Launchpad extends Context.Service<Launchpad, {
  listTokens(q: TokensRequest): Effect.Effect<TokensResult, BadRequest | UpstreamError>
  /**
   * The page when the cache holds it fresh, else `undefined` (then call `listTokens`): a
   * cached hit without a span or a fetch plan, the launchpad's hot path (docs/performance.md).
   * Only valid requests ever fill the cache, so an invalid one always misses here.
   */
  freshTokens(q: TokensRequest): Effect.Effect<TokensResult | undefined>
  /** `chain` is taken as a string so that `all` is refused here, with the envelope. */
  history(chain: string, address: string, range: string | undefined): Effect.Effect<
    HistoryResult,
    BadRequest | NotFound | UpstreamError
  >
}>()("das/launchpad/Launchpad") {}

export const LaunchpadConfig = Config.all({
  cacheTtl: Config.Duration("LAUNCHPAD_CACHE_TTL").pipe(Config.withDefault(Duration.seconds(15))),
  cacheMaxEntries: Config.Int("LAUNCHPAD_CACHE_MAX_ENTRIES").pipe(Config.withDefault(1000)),
  upstreamPageSize: Config.Int("LAUNCHPAD_UPSTREAM_PAGE_SIZE").pipe(Config.withDefault(100)),
  maxMergeDepth: Config.Int("LAUNCHPAD_MAX_MERGE_DEPTH").pipe(Config.withDefault(5000))
})

/** Longest accepted `search`; it is also part of a cache key. */
export const maxSearchLength = 100

const isUpstreamError = (e: unknown): boolean => e instanceof UpstreamUnavailable || e instanceof UpstreamTimeout

interface TokensValue {
  readonly rows: ReadonlyArray<TokenRow>
  readonly total: number
}

/** The request as cached and sent upstream: `search` trimmed, an empty one dropped. */
const normalized = (raw: TokensRequest): TokensRequest => {
  const search = raw.search?.trim()
  return { ...raw, search: search === "" ? undefined : search }
}

const tokensKey = (q: TokensRequest) => JSON.stringify(["tokens", q.chain, q.sort, q.page, q.pageSize, q.search ?? null])

const tokensResult = (q: TokensRequest, cached: Cached<TokensValue>): TokensResult => ({
  tokens: cached.value.rows.map((r) => r.token),
  page: q.page,
  pageSize: q.pageSize,
  total: cached.value.total,
  asOf: new Date(cached.asOf).toISOString(),
  stale: cached.stale,
  source: cached.value
})

export const LaunchpadNoDeps = Layer.effect(
  Launchpad,
  Effect.gen(function*() {
    const config = yield* LaunchpadConfig
    const upstream = yield* LaunchpadUpstream
    const cacheOptions = {
      ttl: config.cacheTtl,
      maxEntries: config.cacheMaxEntries,
      serveStaleOn: isUpstreamError
    }
    const tokensCache = yield* makeQueryCache<TokensValue, UpstreamError>(cacheOptions)
    const historyCache = yield* makeQueryCache<
      Omit<PriceHistory, "asOf" | "range">,
      UpstreamError | NotFound
    >(cacheOptions)

    /** The top `page * pageSize` rows of one chain, through as many upstream pages as that takes. */
    const chainTop = (chain: LaunchpadChain, q: TokensRequest) =>
      Effect.gen(function*() {
        const plan = upstreamPlan(q.page, q.pageSize, config.upstreamPageSize)
        const fetchPage = (page: number) =>
          upstream.listTokens({ chain, sort: q.sort, search: q.search, page, pageSize: plan.size })
        const first = yield* fetchPage(1)
        const lastPage = Math.min(plan.pages, Math.ceil(first.total / plan.size))
        const rest = yield* Effect.forEach(
          Array.from({ length: Math.max(0, lastPage - 1) }, (_, i) => i + 2),
          fetchPage,
          { concurrency: 4 }
        )
        return { rows: [first, ...rest].flatMap((p) => p.rows).slice(0, plan.needed), total: first.total }
      })

    const fetchTokens = (q: TokensRequest): Effect.Effect<TokensValue, UpstreamError> => {
      if (q.chain !== "all") {
        // One chain: the upstream pages exactly as we do.
        return upstream.listTokens({ chain: q.chain, sort: q.sort, search: q.search, page: q.page, pageSize: q.pageSize })
      }
      return Effect.forEach(chains, (c) => chainTop(c.chain, q), { concurrency: "unbounded" }).pipe(
        Effect.map((perChain) => ({
          rows: mergePage(perChain.map((c) => c.rows), q.sort, q.page, q.pageSize),
          total: perChain.reduce((sum, c) => sum + c.total, 0)
        }))
      )
    }

    const listTokens = Effect.fn("Launchpad.listTokens")(function*(raw: TokensRequest) {
      const q = normalized(raw)
      if (q.search !== undefined && q.search.length > maxSearchLength) {
        return yield* new BadRequest({
          message: `search is at most ${maxSearchLength} characters`,
          details: { parameter: "search", maxLength: maxSearchLength }
        })
      }
      if (!Number.isInteger(raw.page) || raw.page < 1 || !Number.isInteger(raw.pageSize) || raw.pageSize < 1 || raw.pageSize > 100) {
        return yield* new BadRequest({ message: "page must be at least 1 and pageSize 1 to 100" })
      }
      if (raw.chain === "all" && raw.page * raw.pageSize > config.maxMergeDepth) {
        return yield* new BadRequest({
          message: `chain=all serves the first ${config.maxMergeDepth} merged tokens: page * pageSize must not exceed that`,
          details: { parameter: "page", maxMergeDepth: config.maxMergeDepth }
        })
      }
      yield* Effect.annotateCurrentSpan({ chain: q.chain, sort: q.sort, page: q.page, pageSize: q.pageSize })
      return tokensResult(q, yield* tokensCache.get(tokensKey(q), fetchTokens(q)))
    })

    const freshTokens = (raw: TokensRequest) => {
      const q = normalized(raw)
      return Effect.map(tokensCache.peek(tokensKey(q)), (hit) => (hit === undefined ? undefined : tokensResult(q, hit)))
    }

    const history = Effect.fn("Launchpad.history")(function*(chain: string, address: string, range: string | undefined) {
      const info = chains.find((c) => c.chain === chain)
      if (info === undefined) {
        return yield* new BadRequest({
          message: chain === "all"
            ? "price history is per chain: chain must be one of base, solana, robinhood (not all)"
            : `unknown chain ${chain}`,
          details: { parameter: "chain" }
        })
      }
      if (!isValidAddress(info, address)) {
        return yield* new BadRequest({
          message: `address is not a ${info.addressKind === "evm" ? "0x-prefixed 20-byte" : "base58 Solana"} address`,
          details: { parameter: "address" }
        })
      }
      const spec = parseRange(range)
      yield* Effect.annotateCurrentSpan({ chain, address, range: spec.range })
      const canonical = info.addressKind === "evm" ? address.toLowerCase() : address
      const key = JSON.stringify(["history", info.chain, canonical, spec.range])
      const fetch = Effect.gen(function*() {
        const row = yield* upstream.findToken(info.chain, address)
        if (row === undefined) {
          return yield* new NotFound({ message: `no launchpad token ${address} on ${info.chain}` })
        }
        const now = yield* Clock.currentTimeMillis
        const window = historyWindow(spec, now, row.createdAtMs)
        const points = yield* upstream.klines({
          chain: info.chain,
          address: row.token.tokenAddress,
          granularitySec: spec.granularitySec,
          ...window
        })
        return { symbol: row.token.symbol, token: row.token.tokenAddress, points }
      })
      const cached = yield* historyCache.get(key, fetch)
      return {
        ...cached.value,
        range: spec.range,
        asOf: new Date(cached.asOf).toISOString(),
        stale: cached.stale
      } satisfies HistoryResult
    })

    return Launchpad.of({ listTokens, freshTokens, history })
  })
)

/** The launchpad with its upstream; needs only an `HttpClient` (e.g. `FetchHttpClient.layer`). */
export const LaunchpadLive = LaunchpadNoDeps.pipe(Layer.provide(LaunchpadUpstreamLive))
