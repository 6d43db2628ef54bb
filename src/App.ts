/**
 * The whole service as one Layer: HTTP server, domain services, database, chain
 * and telemetry. `main.ts` launches it; the process-level tests spawn `main.ts`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Effect, Layer, Option } from "effect"
import type { ConfigError } from "effect/Config"
import { FetchHttpClient } from "effect/http"
import { createServer } from "node:http"
import { AccountFactoryLive } from "./accounts/AccountFactoryLive.ts"
import { SignatureVerifier } from "./auth/SignatureVerifier.ts"
import { AccountStack } from "./chain/Accounts4337.ts"
import { Chain } from "./chain/Chain.ts"
import { LocalNetwork, type LocalNetworkError } from "./chain/LocalNetwork.ts"
import { Network } from "./chain/Network.ts"
import { DatabaseLive } from "./db/Database.ts"
import { AppConfig } from "./platform/AppConfig.ts"
import { TelemetryLive } from "./platform/Telemetry.ts"
import { serveApp } from "./Server.ts"
import { ServicesLive } from "./Services.ts"

/** A configured network when `CHAIN_RPC_URL` is set; otherwise a local one started by the process. */
export const NetworkLive: Layer.Layer<Network, ConfigError | LocalNetworkError> = Layer.unwrap(
  Effect.gen(function*(): Effect.fn.Return<Layer.Layer<Network, ConfigError | LocalNetworkError>, ConfigError> {
    const rpcUrl = yield* Config.option(Config.String("CHAIN_RPC_URL"))
    if (Option.isSome(rpcUrl)) {
      yield* Effect.logInfo(`chain: using the configured network at ${rpcUrl.value}`)
      return Network.layerConfig
    }
    return Layer.effect(
      Network,
      Effect.gen(function*() {
        const local = yield* LocalNetwork
        yield* Effect.logInfo(
          `chain: local ERC-4337 network (chain ${local.chainId}) rpc ${local.rpcUrl} bundler ${local.bundlerUrl}`
        )
        return local
      })
    ).pipe(Layer.provide(LocalNetwork.layer))
  })
)

/** Chain reader, account stack and the things built on them. */
export const ChainLive = Layer.mergeAll(
  AccountFactoryLive,
  Layer.unwrap(Effect.gen(function*() {
    const chain = yield* Chain
    return SignatureVerifier.layerChain(chain.client)
  }))
).pipe(
  Layer.provideMerge(Layer.mergeAll(Chain.layer, AccountStack.layerHybridDeleGator)),
  Layer.provideMerge(NetworkLive)
)

export const AppLive = serveApp.pipe(
  Layer.provide(ServicesLive),
  Layer.provide(TelemetryLive),
  Layer.provide(
    Layer.unwrap(Effect.gen(function*() {
      const config = yield* AppConfig
      return NodeHttpServer.layer(createServer, { port: config.port, host: config.host })
    }))
  ),
  Layer.provide(ChainLive),
  Layer.provide(DatabaseLive),
  Layer.provide(FetchHttpClient.layer),
  Layer.provide(AppConfig.layer)
)
