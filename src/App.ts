/**
 * The whole service as one Layer: HTTP server, domain services, database, chain
 * and telemetry. `main.ts` launches it; the process-level tests spawn `main.ts`.
 */
import { Config, Effect, Layer, Option, Schema } from "effect"
import type { ConfigError } from "effect/Config"
import { FetchHttpClient } from "effect/http"
import { AccountFactoryLive } from "./accounts/AccountFactoryLive.ts"
import { AnchorLive, AnchorScheduleLive } from "./anchor/Anchor.ts"
import { EdgeConfig } from "./api/EdgeConfig.ts"
import { NodeServerLive } from "./api/NodeServer.ts"
import { SignatureVerifier } from "./auth/SignatureVerifier.ts"
import { SponsorshipMetricsLive } from "./builds/SponsorshipMetrics.ts"
import { Chains } from "./chain/Chains.ts"
import { LOCAL_CHAIN_IDS, type LocalNetworkError, LocalNetworks } from "./chain/LocalNetwork.ts"
import { configuredNetworks } from "./chain/Network.ts"
import { DatabaseLive } from "./db/Database.ts"
import { FacilitatorServer } from "./payments/FacilitatorServer.ts"
import { AppConfig } from "./platform/AppConfig.ts"
import { Lifecycle } from "./platform/Lifecycle.ts"
import { Metrics, MetricsServer } from "./platform/Metrics.ts"
import { TelemetryLive } from "./platform/Telemetry.ts"
import { serveApp } from "./Server.ts"
import { RetentionScheduleLive } from "./retention/Retention.ts"
import { ServicesLive } from "./Services.ts"

/** What is built on the served chains: account addresses, anchoring, sign-in signatures of smart accounts. */
export const ChainStackLive = Layer.mergeAll(AccountFactoryLive, AnchorLive, SignatureVerifier.layerChains)

/**
 * The chains served: the configured networks (`CHAINS`, or the single-network keys), or else
 * local ERC-4337 networks started by the process (`LOCAL_CHAIN_IDS`, default two chains).
 */
export const ChainsLive: Layer.Layer<Chains, ConfigError | LocalNetworkError> = Layer.unwrap(
  Effect.gen(function*() {
    const configured = yield* configuredNetworks
    if (Option.isSome(configured)) {
      for (const n of configured.value) {
        yield* Effect.logInfo(`chain: serving ${n.name} (chain ${n.chainId}) rpc ${n.rpcUrl} bundler ${n.bundlerUrl}`)
      }
      return Chains.fromNetworks(configured.value)
    }
    const ids = yield* LocalChainIds
    return Layer.unwrap(Effect.gen(function*() {
      const locals = yield* LocalNetworks
      for (const n of locals) {
        yield* Effect.logInfo(`chain: local ERC-4337 network ${n.name} (chain ${n.chainId}) rpc ${n.rpcUrl} bundler ${n.bundlerUrl}`)
      }
      return Chains.fromNetworks(locals)
    })).pipe(Layer.provide(LocalNetworks.layerWith(ids)))
  })
)

/** The chain ids of the local networks started when none is configured. */
export const LocalChainIds = Config.schema(
  Schema.String.check(Schema.isPattern(/^\s*[1-9]\d{0,14}(\s*,\s*[1-9]\d{0,14})*\s*$/)),
  "LOCAL_CHAIN_IDS"
).pipe(
  Config.withDefault(LOCAL_CHAIN_IDS.join(",")),
  Config.map((s) => [...new Set(s.split(",").map((x) => Number(x.trim())))])
)

export const AppLive = Layer.mergeAll(serveApp, MetricsServer.layer, SponsorshipMetricsLive, FacilitatorServer.layer).pipe(
  Layer.provide(ServicesLive),
  Layer.provide(TelemetryLive),
  Layer.provide(
    Layer.unwrap(Effect.gen(function*() {
      const config = yield* AppConfig
      const edge = yield* EdgeConfig.config
      return NodeServerLive({ ...edge, port: config.port, host: config.host })
    }))
  ),
  Layer.provide(AnchorScheduleLive),
  Layer.provide(RetentionScheduleLive),
  Layer.provide(ChainStackLive),
  Layer.provide(ChainsLive),
  Layer.provide(DatabaseLive),
  Layer.provide(FetchHttpClient.layer),
  Layer.provide(Lifecycle.layer),
  Layer.provide(Metrics.layer),
  Layer.provide(AppConfig.layer)
)
