/**
 * The real HTTP server on a loopback port, over a fresh database, for contract
 * tests through the typed client.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpServer } from "effect/http"
import { getContractAddress, keccak256, toHex, type Hex } from "viem"
import { createServer } from "node:http"
import { AccountFactory } from "../../src/accounts/AccountFactory.ts"
import { SignatureVerifier } from "../../src/auth/SignatureVerifier.ts"
import { makeClient } from "../../src/client/Client.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { TelemetryLive } from "../../src/platform/Telemetry.ts"
import { serveApp } from "../../src/Server.ts"
import { ServicesLive } from "../../src/Services.ts"
import { TestDatabaseLive } from "./TestDatabase.ts"

/**
 * A stand-in for the account stack's factory in tests that do not need a chain:
 * a CREATE2 address over (owner, index), deterministic like the real one.
 */
export const AccountFactoryTest = Layer.succeed(AccountFactory, {
  chainId: 31337,
  chainName: "Local",
  accountType: "Smart account",
  counterfactualAddress: (owner, index) =>
    Effect.succeed(
      getContractAddress({
        opcode: "CREATE2",
        from: "0x0000000000000000000000000000000000004337",
        salt: toHex(index, { size: 32 }),
        bytecodeHash: keccak256(owner as Hex)
      }).toLowerCase()
    )
})

export const testConfig = (overrides: Record<string, string> = {}) =>
  ConfigProvider.layer(
    ConfigProvider.fromUnknown({
      SIWE_DOMAIN: "app.test",
      SIWE_URI: "https://app.test",
      SIWE_CHAIN_ID: "31337",
      ...overrides
    })
  )

export class TestServer extends Context.Service<TestServer, { readonly baseUrl: string }>()("test/TestServer") {}

/** The whole app on 127.0.0.1:<free port> with its own database. */
export const TestServerLive = (options?: {
  readonly config?: Record<string, string>
  readonly accountFactory?: Layer.Layer<AccountFactory>
}) =>
  Layer.effect(
    TestServer,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const address = server.address
      if (address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected a TCP address"))
      return { baseUrl: `http://127.0.0.1:${address.port}` }
    })
  ).pipe(
    Layer.provideMerge(serveApp.pipe(Layer.provide(ServicesLive), Layer.provide(TelemetryLive))),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(TestDatabaseLive()),
    Layer.provideMerge(options?.accountFactory ?? AccountFactoryTest),
    Layer.provideMerge(SignatureVerifier.layerLocal),
    Layer.provideMerge(AppConfig.layer),
    Layer.provideMerge(FetchHttpClient.layer),
    Layer.provide(testConfig(options?.config))
  )

/** A typed client against the test server, with an optional session token. */
export const client = (token?: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) => makeClient({ baseUrl, token }))
