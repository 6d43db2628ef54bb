import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequestError, NotFoundError, UpstreamTimeoutError, UpstreamUnavailableError } from "../api/Errors.ts"
import { Timestamp, withDefault, TextOfLength, Text } from "../domain/Primitives.ts"

export const LaunchpadChain = Schema.Literals(["base", "solana", "robinhood"]).annotate({ identifier: "LaunchpadChain" })
export type LaunchpadChain = typeof LaunchpadChain.Type
export const LaunchpadChainOrAll = Schema.Literals(["base", "solana", "robinhood", "all"])
export const LaunchpadSort = Schema.Literals(["volume24h", "mcap", "age"])
export const PriceRange = Schema.Literals(["1D", "1W", "1M", "1Y", "ALL"])
export type PriceRange = typeof PriceRange.Type

export const LaunchpadToken = Schema.Struct({
  chain: LaunchpadChain,
  chainId: Schema.Int,
  name: Schema.String,
  symbol: Schema.String,
  tokenAddress: Schema.String,
  graduationStatus: Schema.String,
  imageUrl: Schema.String,
  priceUsd: Schema.Finite,
  fdvUsd: Schema.Finite,
  priceChange24hPct: Schema.Finite,
  sparkline: Schema.NullOr(Schema.Array(Schema.Finite)),
  volume24hUsd: Schema.Finite,
  liquidityUsd: Schema.Finite,
  holderCount: Schema.Int,
  createdAt: Timestamp
}).annotate({ identifier: "LaunchpadToken" })
export type LaunchpadToken = typeof LaunchpadToken.Type

export const TokensPage = Schema.Struct({
  tokens: Schema.Array(LaunchpadToken),
  page: Schema.Int,
  pageSize: Schema.Int,
  total: Schema.Int,
  /**
   * When the upstream produced this answer. Beyond the cache TTL it marks a stale answer,
   * served because the upstream is failing (an addition to the contract's shape).
   */
  asOf: Timestamp
}).annotate({ identifier: "TokensPage" })

export const PriceHistory = Schema.Struct({
  symbol: Schema.String,
  token: Schema.String,
  range: PriceRange,
  asOf: Timestamp,
  points: Schema.Array(Schema.Struct({ t: Schema.Int, price: Schema.Finite }))
}).annotate({ identifier: "PriceHistory" })
export type PriceHistory = typeof PriceHistory.Type

const upstream = [UpstreamUnavailableError, UpstreamTimeoutError] as const

export class LaunchpadApi extends HttpApiGroup.make("launchpad")
  .add(
    HttpApiEndpoint.get("listTokens", "/launchpad/tokens", {
      query: {
        chain: withDefault(LaunchpadChainOrAll, "base"),
        sort: withDefault(LaunchpadSort, "volume24h"),
        page: withDefault(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), 1),
        pageSize: withDefault(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })), 30),
        search: Schema.optionalKey(Text)
      },
      success: TokensPage,
      error: [BadRequestError, ...upstream]
    }),
    HttpApiEndpoint.get("tokenHistory", "/launchpad/tokens/:chain/:address/history", {
      params: { chain: LaunchpadChain, address: TextOfLength(1, 128) },
      // An unrecognized range is treated as 1M (the contract): accept any string, normalise in the service.
      query: { range: withDefault(Text, "1M") },
      success: PriceHistory,
      // 404: the upstream does not know this token on this chain.
      error: [BadRequestError, NotFoundError, ...upstream]
    })
  )
  .annotateMerge(OpenApi.annotations({ title: "Launchpad", description: "Public, read-only token browse." }))
{}
