/**
 * The database goes away under a running service (a loopback proxy in front of the run's
 * PostgreSQL is cut): requests answer 503 `service_unavailable` with `Retry-After`, the
 * outage is logged once, and the service recovers by itself when the database is back.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Redacted } from "effect"
import { FetchHttpClient, HttpServer } from "effect/http"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { inject } from "vitest"
import { EdgeConfig } from "../../src/api/EdgeConfig.ts"
import { makeNodeServer } from "../../src/api/NodeServer.ts"
import { signIn } from "../../src/client/signIn.ts"
import { runMigrations } from "../../src/db/Database.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { TelemetryLive } from "../../src/platform/Telemetry.ts"
import { serveApp } from "../../src/Server.ts"
import { ServicesLive } from "../../src/Services.ts"
import { TestChainLive } from "../support/TestChain.ts"
import { createDatabase, testDatabaseName } from "../support/TestDatabase.ts"
import { testConfig } from "../support/TestServer.ts"
import { codeOf, request, tcpProxy } from "./support.ts"

const serverThroughProxy = (url: string, lines: Array<string>) =>
  Layer.effect(
    HttpServer.HttpServer,
    Effect.gen(function*() {
      return yield* HttpServer.HttpServer
    })
  ).pipe(
    Layer.provideMerge(serveApp.pipe(Layer.provide(ServicesLive), Layer.provide(TelemetryLive))),
    Layer.provideMerge(
      Layer.unwrap(Effect.map(EdgeConfig.config, (edge) =>
        NodeHttpServer.layer(() => makeNodeServer(edge), { port: 0, host: "127.0.0.1" })))
    ),
    Layer.provideMerge(TestChainLive()),
    Layer.provideMerge(
      Layer.effectDiscard(runMigrations).pipe(
        Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }))
      )
    ),
    Layer.provideMerge(AppConfig.layer),
    Layer.provideMerge(FetchHttpClient.layer),
    Layer.provide(testConfig({ DATABASE_RETRY_AFTER: "3 seconds" })),
    Layer.provide(Logger.layer([Logger.make(({ message }) => {
      lines.push(Array.isArray(message) ? message.join(" ") : String(message))
    })]))
  )

describe("database outage", () => {
  it.live("503 with Retry-After while the database is unreachable, one log line per outage, recovery on its own", () =>
    Effect.gen(function*() {
      const pg = inject("pg")
      const name = testDatabaseName()
      yield* createDatabase(name)
      const proxy = yield* tcpProxy(pg.host, pg.port)
      const lines: Array<string> = []
      const url = `postgres://${pg.user}:${pg.password}@127.0.0.1:${proxy.port()}/${name}`
      const context = yield* Layer.build(serverThroughProxy(url, lines))
      const address = Context.get(context, HttpServer.HttpServer).address
      const baseUrl = `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}`

      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const auth = { authorization: `Bearer ${session.token}` }
      assert.strictEqual((yield* request(`${baseUrl}/accounts`, { headers: auth })).status, 200)

      for (let outage = 1; outage <= 2; outage++) {
        yield* Effect.promise(() => proxy.cut())
        const answers = yield* Effect.forEach(
          Array.from({ length: 30 }, (_, i) => i % 3 === 0 ? "/auth/nonce" : i % 3 === 1 ? "/accounts" : "/activity"),
          (path) => request(`${baseUrl}${path}`, { method: path === "/auth/nonce" ? "POST" : "GET", headers: auth }),
          { concurrency: 6 }
        )
        for (const res of answers) {
          assert.strictEqual(res.status, 503)
          assert.strictEqual(codeOf(res.json), "service_unavailable")
          assert.strictEqual(res.headers.get("retry-after"), "3")
        }
        // What needs no database still answers.
        assert.strictEqual((yield* request(`${baseUrl}/health/live`)).status, 200)
        assert.strictEqual(lines.filter((l) => l.includes("database: unreachable")).length, outage)
        assert.isFalse(lines.some((l) => l.includes("unhandled failure")))

        yield* Effect.promise(() => proxy.restore())
        let status = 0
        for (let i = 0; i < 100 && status !== 200; i++) {
          status = (yield* request(`${baseUrl}/accounts`, { headers: auth })).status
          if (status !== 200) yield* Effect.sleep("100 millis")
        }
        assert.strictEqual(status, 200)
        for (let i = 0; i < 50 && lines.filter((l) => l.includes("reachable again")).length < outage; i++) {
          yield* Effect.sleep("100 millis")
        }
        assert.strictEqual(lines.filter((l) => l.includes("reachable again")).length, outage)
      }
    }).pipe(Effect.scoped), 60_000)
})
