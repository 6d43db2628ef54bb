import { Duration, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import type { Address } from "../../src/domain/Primitives.ts"
import { make as makeMarketplace, ManagedWallets, Marketplace } from "../../src/marketplace/Marketplace.ts"
import { make as makeUpstream, MarketplaceUpstream } from "../../src/marketplace/MarketplaceUpstream.ts"
import type { FakeUpstream } from "./FakeUpstream.ts"

export interface Knobs {
  readonly timeoutMs?: number
  readonly retries?: number
  readonly evaluatorWallet?: Address
}

export const upstreamLayer = (fake: FakeUpstream, knobs: Knobs = {}) =>
  Layer.effect(
    MarketplaceUpstream,
    makeUpstream({
      apiUrl: fake.url,
      authUrl: fake.url,
      timeout: Duration.millis(knobs.timeoutMs ?? 1_000),
      retries: knobs.retries ?? 2
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))

export const marketplaceLayer = (fake: FakeUpstream, knobs: Knobs = {}) =>
  Layer.effect(Marketplace, makeMarketplace({ evaluatorWallet: Option.fromUndefinedOr(knobs.evaluatorWallet) })).pipe(
    Layer.provideMerge(upstreamLayer(fake, knobs)),
    Layer.provideMerge(ManagedWallets.layerMemory)
  )

/** Run `f` with the marketplace wired to `fake`. */
export const withMarketplace = <A, E>(
  fake: FakeUpstream,
  f: Effect.Effect<A, E, Marketplace | MarketplaceUpstream | ManagedWallets>,
  knobs: Knobs = {}
) => Effect.provide(f, marketplaceLayer(fake, knobs))
