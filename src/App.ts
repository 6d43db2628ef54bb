/**
 * The whole service as one Layer: HTTP server, domain services, database, chain
 * and telemetry. `main.ts` launches it; the process-level tests spawn `main.ts`.
 */
import { Config, Effect, Layer, Option } from "effect"
import type { ConfigError } from "effect/Config"
import { FetchHttpClient } from "effect/http"
import { AccountFactoryLive } from "./accounts/AccountFactoryLive.ts"
import { AnchorLive, AnchorScheduleLive } from "./anchor/Anchor.ts"
import { EdgeConfig } from "./api/EdgeConfig.ts"
import { NodeServerLive } from "./api/NodeServer.ts"
import { SignatureVerifier } from "./auth/SignatureVerifier.ts"
import { AccountStack } from "./chain/Accounts4337.ts"
import { Bundler } from "./chain/Bundler.ts"
import { Chain } from "./chain/Chain.ts"
import { LocalNetwork, type LocalNetworkError } from "./chain/LocalNetwork.ts"
import { Network } from "./chain/Network.ts"
import { Paymaster } from "./chain/Paymaster.ts"
import { DatabaseLive } from "./db/Database.ts"
import { AppConfig } from "./platform/AppConfig.ts"
import { Lifecycle } from "./platform/Lifecycle.ts"
import { Metrics, MetricsServer } from "./platform/Metrics.ts"
import { TelemetryLive } from "./platform/Telemetry.ts"
import { serveApp } from "./Server.ts"
import { RetentionScheduleLive } from "./retention/Retention.ts"
import { ServicesLive } from "./Services.ts"

/** Chain reader, bundler, account stack, paymaster and what is built on them, over a `Network`. */
export const ChainStackLive = Layer.mergeAll(
  AccountFactoryLive,
  AnchorLive,
  Layer.unwrap(Effect.gen(function*() {
    const chain = yield* Chain
    return SignatureVerifier.layerChain(chain.client)
  }))
).pipe(
  Layer.provideMerge(Layer.mergeAll(Chain.layer, Bundler.layer, AccountStack.layerHybridDeleGator, Paymaster.layer))
)

/** A configured network when `CHAIN_RPC_URL` is set; otherwise a local one started by the process. */
export const ChainLive: Layer.Layer<
  Layer.Success<typeof ChainStackLive> | Network,
  ConfigError | LocalNetworkError,
  Exclude<Layer.Services<typeof ChainStackLive>, Network | LocalNetwork>
> = Layer.unwrap(
  Effect.gen(function*() {
    const rpcUrl = yield* Config.option(Config.String("CHAIN_RPC_URL"))
    if (Option.isSome(rpcUrl)) {
      yield* Effect.logInfo(`chain: using the configured network at ${rpcUrl.value}`)
      return ChainStackLive.pipe(Layer.provideMerge(Network.layerConfig))
    }
    const logged = Layer.effectDiscard(Effect.gen(function*() {
      const local = yield* LocalNetwork
      yield* Effect.logInfo(
        `chain: local ERC-4337 network (chain ${local.chainId}) rpc ${local.rpcUrl} bundler ${local.bundlerUrl}`
      )
    }))
    return ChainStackLive.pipe(Layer.provideMerge(logged.pipe(Layer.provideMerge(LocalNetwork.layerNetwork))))
  })
)

export const AppLive = Layer.merge(serveApp, MetricsServer.layer).pipe(
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
  Layer.provide(ChainLive),
  Layer.provide(DatabaseLive),
  Layer.provide(FetchHttpClient.layer),
  Layer.provide(Lifecycle.layer),
  Layer.provide(Metrics.layer),
  Layer.provide(AppConfig.layer)
)
