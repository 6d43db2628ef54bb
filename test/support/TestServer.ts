/**
 * The real HTTP server on a loopback port, over a fresh database, for contract
 * tests through the typed client.
 */
import { ConfigProvider, Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Bundler } from "../../src/chain/Bundler.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { FetchHttpClient, HttpServer } from "effect/http"
import { EdgeConfig } from "../../src/api/EdgeConfig.ts"
import { NodeServerLive } from "../../src/api/NodeServer.ts"
import { makeClient } from "../../src/client/Client.ts"
import { FacilitatorServer } from "../../src/payments/FacilitatorServer.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { Metrics, MetricsServer } from "../../src/platform/Metrics.ts"
import { TelemetryLive } from "../../src/platform/Telemetry.ts"
import { serveApp } from "../../src/Server.ts"
import { ServicesLive } from "../../src/Services.ts"
import { TestChainLive, type TestChainOptions } from "./TestChain.ts"
import { TestDatabaseLive } from "./TestDatabase.ts"

export const testConfig = (overrides: Record<string, string> = {}) =>
  ConfigProvider.layer(
    ConfigProvider.fromUnknown({
      SIWE_DOMAIN: "app.test",
      SIWE_URI: "https://app.test",
      SIWE_CHAIN_ID: "31337",
      // Test files sign in and build far faster than people do; the rate limits themselves
      // are tested in test/edge (which sets its own).
      RATE_LIMIT_NONCE_PER_MINUTE: "10000",
      RATE_LIMIT_SESSION_PER_MINUTE: "10000",
      RATE_LIMIT_BUILDS_PER_MINUTE: "10000",
      // Likewise the sponsorship quotas and budget (tested in test/builds/sponsorship.test.ts, which sets its own).
      SPONSOR_QUOTA_OPS: "0",
      SPONSOR_QUOTA_GAS: "0",
      SPONSOR_ADDRESS_QUOTA_OPS: "0",
      SPONSOR_ADDRESS_QUOTA_GAS: "0",
      SPONSOR_BUDGET_OPS: "0",
      SPONSOR_BUDGET_GAS: "0",
      // The chain follower reads new blocks often, so tests see the chain's record quickly.
      FOLLOWER_INTERVAL: "300 millis",
      // One line per request would fill the test log: access lines at debug (below the default
      // minimum, info); test/edge/accessLog.test.ts turns them on.
      LOG_ACCESS_LEVEL: "debug",
      // The metrics listener on a free port (several test servers run in one process).
      METRICS_PORT: "0",
      // The x402 facilitator (src/payments/FacilitatorServer.ts) only where a test asks for it ("0": a free port).
      X402_FACILITATOR_PORT: "off",
      ...overrides
    })
  )

export class TestServer extends Context.Service<TestServer, {
  readonly baseUrl: string
  /** The internal metrics listener's `/metrics` (src/platform/Metrics.ts). */
  readonly metricsUrl: string
  /** The service's x402 facilitator, when the test turned it on (`X402_FACILITATOR_PORT: "0"`). */
  readonly facilitatorUrl: string | undefined
}>()("test/TestServer") {}

/**
 * The whole app on 127.0.0.1:<free port> with its own database, on the run's local chain.
 * `database`: a given database name (`create: false` attaches a second instance to it);
 * `chain`: overrides of the chain layers (e.g. another bundler URL); `host`: another loopback
 * address to listen on (`::1`).
 */
export const TestServerLive = (options?: {
  readonly config?: Record<string, string>
  readonly host?: "127.0.0.1" | "::1"
  readonly database?: { readonly name: string; readonly create?: boolean }
  readonly chain?: TestChainOptions
}) =>
  Layer.effect(
    TestServer,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const address = server.address
      if (address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected a TCP address"))
      const metrics = yield* MetricsServer
      const host = options?.host === "::1" ? "[::1]" : "127.0.0.1"
      const facilitator = yield* FacilitatorServer
      return {
        baseUrl: `http://${host}:${address.port}`,
        metricsUrl: Option.getOrElse(metrics.url, () => ""),
        facilitatorUrl: Option.getOrUndefined(facilitator.url)
      }
    })
  ).pipe(
    Layer.provideMerge(Layer.mergeAll(serveApp, MetricsServer.layer, FacilitatorServer.layer).pipe(Layer.provide(ServicesLive), Layer.provide(TelemetryLive))),
    Layer.provideMerge(
      Layer.unwrap(Effect.map(EdgeConfig.config, (edge) => NodeServerLive({ ...edge, port: 0, host: options?.host ?? "127.0.0.1" })))
    ),
    Layer.provideMerge(TestChainLive(options?.chain)),
    Layer.provideMerge(
      TestDatabaseLive(
        options?.database === undefined ? undefined : { name: options.database.name, create: options.database.create ?? true }
      )
    ),
    Layer.provideMerge(AppConfig.layer),
    Layer.provideMerge(Metrics.layer),
    Layer.provideMerge(FetchHttpClient.layer),
    Layer.provide(testConfig(options?.config))
  )

/** A typed client against the test server, with an optional session token. */
export const client = (token?: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) => makeClient({ baseUrl, token }))

/** One service instance, in a scope of its own so a test can stop ("kill") it and start another on the same database. */
export const startInstance = (options: NonNullable<Parameters<typeof TestServerLive>[0]>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(TestServerLive(options), scope)
    return {
      baseUrl: Context.get(context, TestServer).baseUrl,
      sql: Context.get(context, SqlClient.SqlClient),
      bundler: Context.get(context, Bundler),
      chain: Context.get(context, Chain),
      stop: Scope.close(scope, Exit.void)
    }
  })
