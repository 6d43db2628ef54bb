/**
 * The socket is bound before the application is served (the rest of the service is still
 * starting): a request then must not hang with nobody to answer it. It is told, with the
 * envelope, to come back shortly; once the application listens, it answers as usual.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { AddressInfo } from "node:net"
import { makeNodeServer } from "../../src/api/NodeServer.ts"

describe("a server still starting", () => {
  it.live("answers 503 with Retry-After and the envelope, never a hang; then the application answers", () =>
    Effect.gen(function*() {
      const server = makeNodeServer({ maxHeaderBytes: 16_384 })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))),
        () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health/ready`
      const early = yield* Effect.promise(() => fetch(url, { signal: AbortSignal.timeout(5_000) }))
      assert.strictEqual(early.status, 503)
      assert.strictEqual(early.headers.get("retry-after"), "1")
      // Like every answer, it carries a request id, the same in the header and the envelope.
      const requestId = early.headers.get("x-request-id")
      assert.match(requestId ?? "", /^[0-9a-f]{32}$/)
      assert.deepStrictEqual(yield* Effect.promise(() => early.json()), {
        error: { code: "service_unavailable", message: "The service is starting; try again shortly", requestId }
      })
      server.on("request", (_request, response) => response.end("served"))
      const later = yield* Effect.promise(() => fetch(url, { signal: AbortSignal.timeout(5_000) }))
      assert.strictEqual(later.status, 200)
      assert.strictEqual(yield* Effect.promise(() => later.text()), "served")
    }).pipe(Effect.scoped))
})
