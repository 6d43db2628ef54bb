/**
 * Stablecoin prices in USD from an HTTP price source in the CoinGecko
 * `simple/price` format:
 *
 *   GET {PRICE_SOURCE_URL}?ids=usd-coin,tether&vs_currencies=usd
 *   → { "usd-coin": { "usd": 0.9998 }, "tether": { "usd": 1.0003 } }
 *
 * `PRICE_SOURCE_URL` is the full endpoint, e.g.
 * `https://api.coingecko.com/api/v3/simple/price`. An optional
 * `PRICE_SOURCE_API_KEY` is sent in the header `PRICE_SOURCE_API_KEY_HEADER`
 * (default `x-cg-demo-api-key`, CoinGecko's demo-plan header). A token the source
 * does not price is simply absent from the answer; a non-2xx answer, a body over
 * `UPSTREAM_MAX_BODY_BYTES` or an unexpected shape is `UpstreamUnavailable`, no answer in
 * `PRICE_SOURCE_TIMEOUT` is `UpstreamTimeout` (the shared `src/api/Upstream.ts`).
 * Nothing is ever made up to fill a gap.
 */
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import type { UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import { getDecoded, UpstreamMaxBodyBytes } from "../api/Upstream.ts"

export const SimplePriceResponse = Schema.Record(
  Schema.String,
  Schema.Struct({ usd: Schema.optionalKey(Schema.Finite) })
)

export const PriceFeedConfig = Config.all({
  url: Config.String("PRICE_SOURCE_URL"),
  apiKey: Config.option(Config.Redacted("PRICE_SOURCE_API_KEY")),
  apiKeyHeader: Config.String("PRICE_SOURCE_API_KEY_HEADER").pipe(Config.withDefault("x-cg-demo-api-key")),
  timeout: Config.Duration("PRICE_SOURCE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5)))
})

export class PriceFeed extends Context.Service<PriceFeed, {
  /** USD prices of the given price-source ids; ids the source does not price are absent. */
  readonly usdPrices: (
    ids: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, number>, UpstreamUnavailable | UpstreamTimeout>
}>()("das/notifications/PriceFeed") {
  /** Reads `PRICE_SOURCE_*`; fails with a ConfigError when `PRICE_SOURCE_URL` is not set. */
  static readonly layer = Layer.effect(
    PriceFeed,
    Effect.gen(function*() {
      const config = yield* PriceFeedConfig
      const client = yield* HttpClient.HttpClient
      const maxBodyBytes = yield* UpstreamMaxBodyBytes

      const usdPrices = Effect.fn("PriceFeed.usdPrices")(function*(ids: ReadonlyArray<string>) {
        if (ids.length === 0) return new Map<string, number>()
        const headers: Record<string, string> = Option.isSome(config.apiKey)
          ? { [config.apiKeyHeader]: Redacted.value(config.apiKey.value) }
          : {}
        const request = HttpClientRequest.get(config.url, {
          urlParams: { ids: ids.join(","), vs_currencies: "usd" },
          headers
        })
        const body = yield* getDecoded(client, request, SimplePriceResponse, {
          name: "The price source",
          timeout: config.timeout,
          retries: 0,
          maxBodyBytes
        })
        const prices = new Map<string, number>()
        for (const id of ids) {
          const usd = body[id]?.usd
          // A price at or below zero is a broken answer, not a market: no price (skipped), never a depeg.
          if (usd !== undefined && usd > 0) prices.set(id, usd)
        }
        return prices
      })

      return PriceFeed.of({ usdPrices })
    })
  )
}
