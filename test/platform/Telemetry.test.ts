/**
 * Spans reach an OTLP receiver: a real HTTP server on loopback standing in for
 * the collector, the real service exporting to it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createServer, type Server } from "node:http"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
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
        return (yield* Effect.promise(() => res.json())) as { error: { requestId: string } }
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({ config: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } })))
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
      const statusSpan = receiver.spans.find((s) => JSON.stringify(s.attributes ?? []).includes("/marketplace/managed/connect/status"))
      assert.isDefined(statusSpan, "the connect-status request was traced")
      assert.notInclude(JSON.stringify(receiver.spans), "SECRET-handle-42")
    }))
})
