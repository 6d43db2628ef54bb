/**
 * The access log, written by the edge (`GlobalEnvelope.ts`) rather than the server's logger
 * middleware: one line per request with the method, the path as requested (never its query),
 * the status and the `http.span` duration; an error's line carries the `requestId` its
 * envelope shows, so an operator can find the request a client quotes. With no span exporter
 * (the tests' default), that id is the request's own, the same wherever it is read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, References } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { request } from "./support.ts"

interface Line {
  readonly message: unknown
  readonly annotations: Record<string, unknown>
  readonly spans: ReadonlyArray<string>
}

describe("the access log", () => {
  it.live("one line per request, from the edge; an error's line carries its envelope's requestId", () =>
    Effect.gen(function*() {
      const lines: Array<Line> = []
      const capture = Logger.make(({ fiber, message }) => {
        lines.push({
          message: Array.isArray(message) ? message[0] : message,
          annotations: { ...fiber.getRef(References.CurrentLogAnnotations) },
          spans: [...fiber.getRef(References.CurrentLogSpans)].map(([label]) => label)
        })
      })
      // LOG_LEVEL=debug: the tests write access lines at debug (LOG_ACCESS_LEVEL, test/support/TestServer.ts).
      const context = yield* Layer.build(
        TestServerLive().pipe(
          Layer.provide(Logger.layer([capture])),
          Layer.provide(Layer.succeed(References.MinimumLogLevel, "Debug"))
        )
      )
      const { baseUrl } = Context.get(context, TestServer)
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const accessLines = (path: string) =>
        lines.filter((l) => l.message === "Sent HTTP response" && l.annotations["http.url"] === path)

      const ok = yield* request(`${baseUrl}/v1/accounts?label=secret-query`, {
        headers: { authorization: `Bearer ${session.token}` }
      })
      assert.strictEqual(ok.status, 200)
      const [okLine, ...more] = accessLines("/v1/accounts")
      assert.strictEqual(more.length, 0, "one line for the request")
      assert.deepStrictEqual(okLine!.annotations, { "http.method": "GET", "http.url": "/v1/accounts", "http.status": 200 })
      assert.include(okLine!.spans, "http.span")
      assert.notInclude(JSON.stringify(lines), "secret-query", "no query reaches the log")

      const refused = yield* request(`${baseUrl}/delegations`)
      assert.strictEqual(refused.status, 401)
      const refusedId = (refused.json as { error: { requestId?: string } }).error.requestId
      assert.match(String(refusedId), /^[0-9a-f]{32}$/)
      // The same id in the header, on every answer.
      assert.strictEqual(refused.headers.get("x-request-id"), refusedId)
      assert.match(String(ok.headers.get("x-request-id")), /^[0-9a-f]{32}$/)
      assert.deepStrictEqual(accessLines("/delegations").map((l) => l.annotations), [
        { "http.method": "GET", "http.url": "/delegations", "http.status": 401, requestId: refusedId }
      ])

      // Answered by the edge itself (no such route): the same rule.
      const missing = yield* request(`${baseUrl}/no/such/route`)
      assert.strictEqual(missing.status, 404)
      const missingId = (missing.json as { error: { requestId?: string } }).error.requestId
      assert.match(String(missingId), /^[0-9a-f]{32}$/)
      assert.notStrictEqual(missingId, refusedId, "each request its own id")
      assert.deepStrictEqual(accessLines("/no/such/route").map((l) => l.annotations["requestId"]), [missingId])
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("access lines are written at LOG_ACCESS_LEVEL: below the minimum level none is built", () =>
    Effect.gen(function*() {
      const linesAt = (accessLevel: string) =>
        Effect.gen(function*() {
          const lines: Array<{ message: unknown; level: string }> = []
          const capture = Logger.make(({ message, logLevel }) => {
            lines.push({ message: Array.isArray(message) ? message[0] : message, level: logLevel })
          })
          const context = yield* Layer.build(
            TestServerLive({ config: { LOG_ACCESS_LEVEL: accessLevel } }).pipe(Layer.provide(Logger.layer([capture])))
          )
          const { baseUrl } = Context.get(context, TestServer)
          const res = yield* request(`${baseUrl}/health/live`)
          assert.strictEqual(res.status, 200)
          return lines.filter((l) => l.message === "Sent HTTP response").map((l) => l.level)
        }).pipe(Effect.scoped)
      // The default minimum is info: debug access lines (the tests' setting) are not written.
      assert.deepStrictEqual(yield* linesAt("debug"), [])
      assert.deepStrictEqual(yield* linesAt("info"), ["Info"])
      assert.deepStrictEqual(yield* linesAt("WARN"), ["Warn"])
    }), { timeout: 60_000 })
})
