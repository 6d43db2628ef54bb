/**
 * `Retry-After` comes from `details.retryAfterSeconds` on any 429 (or 503) a handler
 * answers, not only the edge's own rate limits: a quota raised deep in a service gets
 * the header too.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { ErrorEnvelope, ErrorEnvelopeLive } from "../../src/api/Envelope.ts"
import { ServiceUnavailable, TooManyRequests, TooManyRequestsError } from "../../src/api/Errors.ts"
import { GlobalEnvelope } from "../../src/api/GlobalEnvelope.ts"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { ServiceRoutes } from "../../src/api/Routes.ts"
import { serviceRoutes } from "../../src/Server.ts"

class QuotaApi extends HttpApi.make("quota")
  .add(
    HttpApiGroup.make("quota").add(
      HttpApiEndpoint.post("sponsor", "/sponsor", { success: Schema.String, error: TooManyRequestsError }),
      HttpApiEndpoint.get("busy", "/busy", { success: Schema.String }),
      HttpApiEndpoint.get("plain", "/plain", { success: Schema.String, error: TooManyRequestsError }),
      HttpApiEndpoint.get("sql", "/sql", { success: Schema.String })
    )
  )
  .middleware(ErrorEnvelope)
{}

const Handlers = HttpApiBuilder.group(QuotaApi, "quota", (handlers) =>
  handlers
    .handle("sponsor", () =>
      Effect.fail(new TooManyRequests({ message: "Sponsorship quota used up", details: { retryAfterSeconds: 42.2 } })))
    .handle("busy", () =>
      Effect.fail(new ServiceUnavailable({ message: "Busy", details: { retryAfterSeconds: 7 } })))
    .handle("plain", () => Effect.fail(new TooManyRequests({ message: "No hint" })))
    // A handler that lets a connection failure through as a typed failure (not a defect).
    .handle("sql", () =>
      Effect.fail(
        new SqlError({ reason: new ConnectionError({ cause: new Error("ECONNREFUSED"), message: "refused" }) })
      ) as unknown as Effect.Effect<string>))

describe("Retry-After from a handler's typed error", () => {
  it.effect("a 429 or 503 with details.retryAfterSeconds carries the header; without it, none; a handler's SQL outage is 503", () =>
    Effect.gen(function*() {
      const App = Layer.mergeAll(
        HttpApiBuilder.layer(QuotaApi).pipe(Layer.provide(Handlers), Layer.provide(ErrorEnvelopeLive)),
        GlobalEnvelope.pipe(Layer.provide(Layer.succeed(ServiceRoutes, serviceRoutes)))
      ).pipe(Layer.provide(NodeHttpServer.layerHttpServices))
      const { handler, dispose } = HttpRouter.toWebHandler(App, { disableLogger: true })
      const sponsor = yield* Effect.promise(() => handler(new Request("http://x/sponsor", { method: "POST" })))
      const body = yield* Effect.promise(() => sponsor.json() as Promise<{ error: { code: string } }>)
      const busy = yield* Effect.promise(() => handler(new Request("http://x/busy")))
      const plain = yield* Effect.promise(() => handler(new Request("http://x/plain")))
      const sql = yield* Effect.promise(() => handler(new Request("http://x/sql")))
      const sqlBody = yield* Effect.promise(() => sql.json() as Promise<{ error: { code: string } }>)
      yield* Effect.promise(dispose)
      assert.strictEqual(sponsor.status, 429)
      assert.strictEqual(body.error.code, "rate_limited")
      assert.strictEqual(sponsor.headers.get("retry-after"), "43")
      assert.strictEqual(busy.status, 503)
      assert.strictEqual(busy.headers.get("retry-after"), "7")
      assert.strictEqual(plain.status, 429)
      assert.isNull(plain.headers.get("retry-after"))
      assert.strictEqual(sql.status, 503)
      assert.strictEqual(sqlBody.error.code, "service_unavailable")
      assert.strictEqual(sql.headers.get("retry-after"), "5")
    }))
})
