/**
 * Spans reach an OTLP receiver: a real HTTP server on loopback standing in for
 * the collector, the real service exporting to it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { ConfigProvider, Duration, Effect, Layer } from "effect"
import { createServer, type Server } from "node:http"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { runLoop } from "../../src/platform/Loop.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { spanProcessorFor, TelemetryLive } from "../../src/platform/Telemetry.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

interface OtlpSpan {
  readonly name: string
  readonly traceId: string
  readonly parentSpanId?: string
  readonly spanId: string
  /** 2 = SERVER */
  readonly kind: number
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: unknown }>
}

const startReceiver = () =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: Server; url: string; spans: Array<OtlpSpan> }>((resolve) => {
        const spans: Array<OtlpSpan> = []
        const server = createServer((req, res) => {
          let body = ""
          req.on("data", (c) => (body += c))
          req.on("end", () => {
            if (req.url === "/v1/traces") {
              const payload = JSON.parse(body)
              for (const rs of payload.resourceSpans ?? []) {
                for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans)
              }
            }
            res.writeHead(200, { "content-type": "application/json" }).end("{}")
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          const port = typeof address === "object" && address !== null ? address.port : 0
          resolve({ server, url: `http://127.0.0.1:${port}`, spans })
        })
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((r) => server.close(() => r())))
  )

describe("tracing", () => {
  it.live("OpenTelemetry's OTEL_BSP_SCHEDULE_DELAY is honoured: spans held until the tracer stops, which exports them", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const config = ConfigProvider.layer(ConfigProvider.fromUnknown({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: "3600000",
        OTEL_BSP_MAX_QUEUE_SIZE: "10000",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "10000"
      }))
      yield* Effect.gen(function*() {
        yield* Effect.withSpan(Effect.void, "Held.step")
        // The service's own delay (500 ms) would have exported it by now.
        yield* Effect.sleep("1500 millis")
        assert.deepStrictEqual(receiver.spans.map((s) => s.name), [])
      }).pipe(Effect.provide(Layer.fresh(TelemetryLive.pipe(Layer.provide(AppConfig.layer), Layer.provide(config)))))
      assert.deepStrictEqual(receiver.spans.map((s) => s.name), ["Held.step"])
    }))

  it.live("a loop pass that did work is exported with everything under it; idle passes are not", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      let pass = 0
      yield* Effect.gen(function*() {
        yield* runLoop({
          name: "test",
          interval: Duration.millis(20),
          pass: Effect.suspend(() => {
            pass++
            return pass === 3 ? Effect.as(Effect.withSpan(Effect.void, "Work.step"), "worked" as const) : Effect.succeed("idle" as const)
          })
        })
        while (pass < 8) yield* Effect.sleep("20 millis")
      }).pipe(
        Effect.scoped,
        Effect.provide(NodeSdk.layer(() => ({ resource: { serviceName: "test" }, spanProcessor: spanProcessorFor(`${receiver.url}/v1/traces`) })))
      )
      const loops = receiver.spans.filter((s) => s.name === "loop test")
      assert.strictEqual(loops.length, 1, "one pass did work")
      const step = receiver.spans.find((s) => s.name === "Work.step")
      assert.strictEqual(step?.parentSpanId, loops[0]!.spanId)
    }))

  it.live("a request's server span and its service spans arrive at the OTLP endpoint, and requestId is its trace id", () =>
    Effect.gen(function*() {
      const receiver = yield* startReceiver()
      const result = yield* Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
        const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
        // A secret query parameter (the connect polling handle) must not reach span attributes.
        yield* Effect.promise(() =>
          fetch(`${baseUrl}/marketplace/managed/connect/status?requestId=SECRET-handle-42`, {
            headers: { authorization: `Bearer ${session.token}` }
          })
        )
        const res = yield* Effect.promise(() => fetch(`${baseUrl}/accounts`))
        const body = (yield* Effect.promise(() => res.json())) as { error: { requestId: string } }
        // An idle service: webhook delivery polls every 100 ms and finds nothing.
        yield* Effect.sleep("1200 millis")
        return { ...body, traceparent: res.headers.get("traceparent"), requestIdHeader: res.headers.get("x-request-id") }
      }).pipe(
        Effect.provide(
          Layer.fresh(
            TestServerLive({ config: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, WEBHOOKS_POLL_INTERVAL: "100 millis" } })
          )
        )
      )
      // The layer's scope has closed: the SDK flushed on shutdown.
      const names = receiver.spans.map((s) => s.name)
      assert.include(names, "Sessions.signIn")
      assert.include(names, "Accounts.ensurePrimary")
      // The hot paths' spans (withSpan, no per-call stack capture) still arrive, each in a request's trace.
      for (const name of ["Sessions.authenticate", "Accounts.list"]) {
        const span = receiver.spans.find((s) => s.name === name)
        assert.isDefined(span, `${name} is traced`)
        assert.isTrue(receiver.spans.some((s) => s.spanId === span!.parentSpanId), `${name} has its parent in the export`)
      }
      const signInSpan = receiver.spans.find((s) => s.name === "Sessions.signIn")!
      const server = receiver.spans.find((s) => s.traceId === signInSpan.traceId && s.kind === 2)
      assert.isDefined(server, "the service span has a server span in its trace")
      assert.strictEqual(signInSpan.parentSpanId, server!.spanId, "the service span is a child of the request's span")
      assert.isTrue(receiver.spans.some((s) => s.traceId === result.error.requestId), "requestId is the trace id")
      // Server spans are named by route (OpenTelemetry's HTTP conventions), never by the raw path.
      assert.strictEqual(server!.name, "POST /auth/session")
      const accounts = receiver.spans.find((s) => s.kind === 2 && s.traceId === result.error.requestId)
      assert.strictEqual(accounts?.name, "GET /accounts")
      // The answer names its trace: x-request-id, and traceparent with the server span.
      assert.strictEqual(result.requestIdHeader, result.error.requestId)
      assert.strictEqual(result.traceparent, `00-${accounts!.traceId}-${accounts!.spanId}-01`)
      // No span per idle tick: a dozen empty webhook polls exported nothing.
      // (A pass cut by the test's end, interrupted, is exported: it did not finish, idle or not.)
      const interrupted = new Set(
        receiver.spans.filter((s) => JSON.stringify(s.attributes ?? []).includes("effect.fiber.interrupted")).map((s) => s.traceId)
      )
      const ticks = receiver.spans.filter((s) =>
        (s.name === "loop webhooks" || s.name === "WebhookDelivery.runOnce") && !interrupted.has(s.traceId)
      )
      assert.deepStrictEqual(ticks.map((s) => s.name), [], "idle ticks were exported")
      const statusSpan = receiver.spans.find((s) => JSON.stringify(s.attributes ?? []).includes("/marketplace/managed/connect/status"))
      assert.isDefined(statusSpan, "the connect-status request was traced")
      assert.notInclude(JSON.stringify(receiver.spans), "SECRET-handle-42")
    }))
})
