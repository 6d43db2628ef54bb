/**
 * The public launchpad upstream (token API and vp-api klines), and the ONE place where
 * its records become the contract's `LaunchpadToken` (`toLaunchpadToken`).
 *
 * Failure policy (the shared `src/api/Upstream.ts`): every call is bounded by
 * `LAUNCHPAD_UPSTREAM_TIMEOUT` per attempt and `UPSTREAM_MAX_BODY_BYTES`; only transport
 * faults (connection refused/reset) are retried, at most `LAUNCHPAD_UPSTREAM_RETRIES`
 * times; a non-2xx answer, a body over the cap, unreadable JSON or an unexpected shape is
 * `UpstreamUnavailable` (502), a timeout is `UpstreamTimeout` (504). Nothing is ever made
 * up to fill a gap.
 */
import { Config, Context, Duration, Effect, Layer, Schema } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import { getDecoded, UpstreamMaxBodyBytes } from "../api/Upstream.ts"
import type { LaunchpadChain, LaunchpadToken } from "./Api.ts"
import { chainInfo, type ChainInfo, chainOfUpstream, sameAddress } from "./Chains.ts"

export type UpstreamError = UpstreamUnavailable | UpstreamTimeout
export type TokenSort = "volume24h" | "mcap" | "age"

// ---------------------------------------------------------------------------
// Upstream wire formats (what we read; unknown extra fields are ignored)
// ---------------------------------------------------------------------------

const NumberLike = Schema.Union([Schema.Finite, Schema.FiniteFromString])

export const UpstreamToken = Schema.Struct({
  id: Schema.Union([Schema.Int, Schema.String]),
  name: Schema.String,
  symbol: Schema.String,
  /** 1 prototype (bonding curve), 2 sentient (graduated). */
  status: Schema.Literals([1, 2]),
  tokenAddress: Schema.NullOr(Schema.String),
  /** The bonding token; stands in for `tokenAddress` while that is still null. */
  preToken: Schema.optionalKey(Schema.NullOr(Schema.String)),
  holderCount: Schema.Int,
  mcapInVirtual: NumberLike,
  image: Schema.optionalKey(Schema.NullOr(Schema.Struct({ url: Schema.String }))),
  chain: Schema.String,
  lpCreatedAt: Schema.String,
  priceUsd: NumberLike,
  fdv: NumberLike,
  volume24h: NumberLike,
  liquidityUsd: NumberLike,
  priceChangePercent24h: NumberLike
})
export type UpstreamToken = typeof UpstreamToken.Type

const TokensResponse = Schema.Struct({
  data: Schema.Array(UpstreamToken),
  meta: Schema.Struct({ pagination: Schema.Struct({ total: Schema.Int }) })
})

const Kline = Schema.Struct({
  open: NumberLike,
  high: NumberLike,
  low: NumberLike,
  close: NumberLike,
  volume: NumberLike,
  startInMilli: Schema.Int,
  endInMilli: Schema.Int
})
const KlinesResponse = Schema.Struct({ data: Schema.Struct({ Klines: Schema.Array(Kline) }) })

// ---------------------------------------------------------------------------
// The mapping (the only place upstream fields become contract fields)
// ---------------------------------------------------------------------------

/** A mapped token plus the upstream's own sort keys, so a merge orders rows exactly as each chain does. */
export interface TokenRow {
  readonly token: LaunchpadToken
  readonly mcapInVirtual: number
  readonly createdAtMs: number
}

export class MalformedUpstream extends Error {}

export const graduationStatusOf = (status: 1 | 2): string => (status === 2 ? "sentient" : "prototype")

/** Throws `MalformedUpstream` when the record cannot honestly become a contract token. */
export const toLaunchpadToken = (raw: UpstreamToken, expected: ChainInfo): TokenRow => {
  const info = chainOfUpstream(raw.chain)
  if (info === undefined || info.chain !== expected.chain) {
    throw new MalformedUpstream(`token ${raw.id}: chain ${raw.chain} where ${expected.upstream} was asked for`)
  }
  const address = raw.tokenAddress ?? raw.preToken ?? null
  if (address === null || address === "") throw new MalformedUpstream(`token ${raw.id}: no address`)
  const created = Date.parse(raw.lpCreatedAt)
  // Years outside 0000..9999 print as `+010000-…`, which the wire's Timestamp refuses (a 500, not a 502).
  const year = new Date(created).getUTCFullYear()
  if (!Number.isFinite(created) || year < 0 || year > 9999) {
    throw new MalformedUpstream(`token ${raw.id}: lpCreatedAt is not a date`)
  }
  return {
    token: {
      chain: info.chain,
      chainId: info.chainId,
      name: raw.name,
      symbol: raw.symbol,
      tokenAddress: address,
      graduationStatus: graduationStatusOf(raw.status),
      imageUrl: raw.image?.url ?? "",
      priceUsd: raw.priceUsd,
      fdvUsd: raw.fdv,
      priceChange24hPct: raw.priceChangePercent24h,
      // The token API carries no series; the history endpoint is the place for one.
      sparkline: null,
      volume24hUsd: raw.volume24h,
      liquidityUsd: raw.liquidityUsd,
      holderCount: raw.holderCount,
      createdAt: new Date(created).toISOString()
    },
    mcapInVirtual: raw.mcapInVirtual,
    createdAtMs: created
  }
}

/** The upstream field each contract sort uses; merges must order by the same key. */
export const upstreamSortField = (sort: TokenSort): string =>
  sort === "volume24h" ? "volume24h" : sort === "mcap" ? "mcapInVirtual" : "lpCreatedAt"

export interface PricePoint {
  readonly t: number
  readonly price: number
}

// ---------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------

export interface TokensQuery {
  readonly chain: LaunchpadChain
  readonly sort: TokenSort
  readonly search?: string | undefined
  readonly page: number
  readonly pageSize: number
}

export interface KlinesQuery {
  readonly chain: LaunchpadChain
  readonly address: string
  readonly granularitySec: number
  readonly startMs: number
  readonly endMs: number
  readonly limit: number
}

export class LaunchpadUpstream extends Context.Service<LaunchpadUpstream, {
  /** One upstream page of one chain, in the upstream's order. */
  listTokens(q: TokensQuery): Effect.Effect<{ readonly rows: ReadonlyArray<TokenRow>; readonly total: number }, UpstreamError>
  /** The token with exactly this address on this chain, if the upstream knows it. */
  findToken(chain: LaunchpadChain, address: string): Effect.Effect<TokenRow | undefined, UpstreamError>
  /** Close prices of the candles in the window, ascending by time. */
  klines(q: KlinesQuery): Effect.Effect<ReadonlyArray<PricePoint>, UpstreamError>
}>()("das/launchpad/LaunchpadUpstream") {}

export const LaunchpadUpstreamConfig = Config.all({
  apiUrl: Config.String("LAUNCHPAD_API_URL").pipe(Config.withDefault("https://api.virtuals.io")),
  pricesUrl: Config.String("LAUNCHPAD_PRICES_URL").pipe(Config.withDefault("https://vp-api.virtuals.io")),
  timeout: Config.Duration("LAUNCHPAD_UPSTREAM_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5))),
  retries: Config.Int("LAUNCHPAD_UPSTREAM_RETRIES").pipe(Config.withDefault(2))
})

const trimSlash = (url: string) => url.replace(/\/+$/, "")

export const LaunchpadUpstreamLive = Layer.effect(
  LaunchpadUpstream,
  Effect.gen(function*() {
    const config = yield* LaunchpadUpstreamConfig
    const client = yield* HttpClient.HttpClient
    const apiUrl = trimSlash(config.apiUrl)
    const pricesUrl = trimSlash(config.pricesUrl)

    const maxBodyBytes = yield* UpstreamMaxBodyBytes

    /** GET + status check + decode, bounded in time and size, retried on transport faults only. */
    const getJson = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
      what: string,
      url: string,
      urlParams: Record<string, string>,
      schema: S
    ): Effect.Effect<S["Type"], UpstreamError> =>
      getDecoded(client, HttpClientRequest.get(url, { urlParams }), schema, {
        name: `The launchpad upstream (${what})`,
        timeout: config.timeout,
        retries: config.retries,
        maxBodyBytes,
        backoff: Duration.millis(100)
      })

    const mapRows = (raws: ReadonlyArray<UpstreamToken>, info: ChainInfo) =>
      Effect.try({
        try: () => raws.map((raw) => toLaunchpadToken(raw, info)),
        catch: (e) =>
          new UpstreamUnavailable({
            message: `The launchpad upstream answered an unexpected token: ${e instanceof Error ? e.message : String(e)}`
          })
      })

    const listTokens = Effect.fn("LaunchpadUpstream.listTokens")(function*(q: TokensQuery) {
      const info = chainInfo(q.chain)
      yield* Effect.annotateCurrentSpan({ chain: q.chain, sort: q.sort, page: q.page, pageSize: q.pageSize })
      const params: Record<string, string> = {
        "filters[chain]": info.upstream,
        "sort[0]": `${upstreamSortField(q.sort)}:desc`,
        "pagination[page]": String(q.page),
        "pagination[pageSize]": String(q.pageSize)
      }
      if (q.search !== undefined && q.search !== "") {
        params["filters[$or][0][name][$contains]"] = q.search
        params["filters[$or][1][symbol][$contains]"] = q.search
      }
      const body = yield* getJson("tokens", `${apiUrl}/api/virtuals`, params, TokensResponse)
      const rows = yield* mapRows(body.data, info)
      return { rows, total: body.meta.pagination.total }
    })

    const findToken = Effect.fn("LaunchpadUpstream.findToken")(function*(chain: LaunchpadChain, address: string) {
      const info = chainInfo(chain)
      const body = yield* getJson("token", `${apiUrl}/api/virtuals`, {
        "filters[chain]": info.upstream,
        "filters[$or][0][tokenAddress][$contains]": address,
        "filters[$or][1][preToken][$contains]": address,
        "pagination[page]": "1",
        "pagination[pageSize]": "25"
      }, TokensResponse)
      // `$contains` is a substring match: keep only the exact address.
      const exact = body.data.filter((t) =>
        [t.tokenAddress, t.preToken].some((a) => a != null && sameAddress(info, a, address))
      )
      const rows = yield* mapRows(exact, info)
      return rows[0]
    })

    const klines = Effect.fn("LaunchpadUpstream.klines")(function*(q: KlinesQuery) {
      const info = chainInfo(q.chain)
      const body = yield* getJson("klines", `${pricesUrl}/vp-api/klines`, {
        tokenAddress: q.address,
        granularity: String(q.granularitySec),
        start: String(q.startMs),
        end: String(q.endMs),
        limit: String(q.limit),
        chainID: String(info.klineChainId)
      }, KlinesResponse)
      const byTime = new Map<number, number>()
      for (const k of body.data.Klines) byTime.set(k.startInMilli, k.close)
      return [...byTime.entries()].sort((a, b) => a[0] - b[0]).map(([t, price]): PricePoint => ({ t, price }))
    })

    return LaunchpadUpstream.of({ listTokens, findToken, klines })
  })
)
