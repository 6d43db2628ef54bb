/**
 * The whole service as one Layer: HTTP server, domain services, database, chain
 * and telemetry. `main.ts` launches it; the process-level tests spawn `main.ts`.
 */
import { Config, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
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
import { checkLocalWorld, LocalWorld, prepareLocalWorld } from "./chain/LocalWorld.ts"
import { configuredNetworks } from "./chain/Network.ts"
import { DatabaseLive } from "./db/Database.ts"
import { FacilitatorServer } from "./payments/FacilitatorServer.ts"
import { AppConfig } from "./platform/AppConfig.ts"
import { portTaken } from "./platform/FreePort.ts"
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
    // The service's world (LocalWorldLive): the chains keep their state, and the database must describe them.
    const world = yield* Effect.serviceOption(LocalWorld)
    const stateRoot = Option.flatMap(world, (w) => w.stateRoot)
    return Layer.unwrap(Effect.gen(function*() {
      const locals = yield* LocalNetworks
      for (const n of locals) {
        yield* Effect.logInfo(`chain: local ERC-4337 network ${n.name} (chain ${n.chainId}) rpc ${n.rpcUrl} bundler ${n.bundlerUrl}`)
      }
      const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
      if (Option.isSome(world) && Option.isSome(sql)) {
        yield* checkLocalWorld(locals).pipe(Effect.provideService(SqlClient.SqlClient, sql.value), Effect.orDie)
      }
      return Chains.fromNetworks(locals)
    })).pipe(Layer.provide(LocalNetworks.layerWith(ids, Option.isSome(stateRoot) ? { stateDir: stateRoot.value } : {})))
  })
)

/**
 * Before the database and the chains start: where the local chains keep their state, and a
 * fresh world when they start afresh (chain/LocalWorld.ts). Nothing with configured networks.
 */
export const LocalWorldLive: Layer.Layer<LocalWorld, ConfigError> = Layer.effect(
  LocalWorld,
  Effect.gen(function*() {
    if (Option.isSome(yield* configuredNetworks)) return LocalWorld.of({ stateRoot: Option.none() })
    const stateRoot = yield* prepareLocalWorld({
      dataDir: yield* Config.String("DATA_DIR").pipe(Config.withDefault(".data")),
      chainIds: yield* LocalChainIds,
      embeddedDb: Option.isNone(yield* Config.option(Config.Redacted("DATABASE_URL")))
    })
    return LocalWorld.of({ stateRoot: Option.some(stateRoot) })
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

/** The embedded defaults: no `DATABASE_URL` and no configured network (a developer's machine). */
const embeddedDefaults = Effect.gen(function*() {
  const configured = yield* configuredNetworks
  const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
  return Option.isNone(configured) && Option.isNone(url)
})

/** On the embedded defaults, `/metrics` takes a free port when 9464 is taken (METRICS_PORT unset). */
const MetricsServerLive = Layer.unwrap(
  Effect.map(embeddedDefaults, (anyPortByDefault) => MetricsServer.layerFor({ anyPortByDefault }))
)

/**
 * The HTTP port is bound last, after PostgreSQL and the chains have started: a port that is
 * taken already ends the start at once, in one line naming `PORT`, not a minute later.
 */
const HttpPortCheckLive = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  if (config.port !== 0 && (yield* Effect.promise(() => portTaken(config.host, config.port)))) {
    return yield* Effect.die(new Error(`PORT ${config.port} on ${config.host} (HOST) is taken by another process: set PORT to a free port`))
  }
}))

export const AppLive = Layer.mergeAll(serveApp, MetricsServerLive, SponsorshipMetricsLive, FacilitatorServer.layer).pipe(
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
  Layer.provide(LocalWorldLive),
  Layer.provide(HttpPortCheckLive),
  Layer.provide(FetchHttpClient.layer),
  Layer.provide(Lifecycle.layer),
  Layer.provide(Metrics.layer),
  Layer.provide(AppConfig.layer)
)
