/**
 * The marketplace handler groups on a real HTTP server (127.0.0.1, port 0),
 * pointed at a fake upstream, with a stand-in bearer check: the token is the
 * signer's address. Also a small SSE client over node:http.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder } from "effect/http-api"
import * as http from "node:http"
import { ErrorEnvelope, ErrorEnvelopeLive } from "../../src/api/Envelope.ts"
import { Unauthorized } from "../../src/api/Errors.ts"
import { Authorization, CurrentSigner } from "../../src/auth/Middleware.ts"
import { MarketplaceApi, MarketplaceStreamApi } from "../../src/marketplace/Api.ts"
import { MarketplaceHandlers, MarketplaceServices, MarketplaceStreamHandlers } from "../../src/marketplace/Http.ts"
import { isAddress } from "../../src/marketplace/UpstreamMapping.ts"

/** Same id as the root API, so the groups' handler layers fit it. */
export const TestApi = HttpApi.make("delegated-authority")
  .add(MarketplaceApi)
  .add(MarketplaceStreamApi)
  .middleware(ErrorEnvelope)

const AuthorizationTest = Layer.succeed(
  Authorization,
  Authorization.of({
    bearer: (httpEffect, { credential }) => {
      const value = Redacted.value(credential)
      return isAddress(value)
        ? Effect.provideService(httpEffect, CurrentSigner, { address: value, sessionId: `s-${value}`, sessionExpiresAt: new Date(Date.now() + 3_600_000) })
        : Effect.fail(new Unauthorized({ message: "no session" }))
    }
  })
)

export class MarketplaceServer extends Context.Service<MarketplaceServer, { readonly baseUrl: string }>()(
  "test/MarketplaceServer"
) {}

export const MarketplaceServerLive = (config: Record<string, string>) =>
  Layer.effect(
    MarketplaceServer,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const address = server.address
      if (address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected TCP"))
      return { baseUrl: `http://127.0.0.1:${address.port}` }
    })
  ).pipe(
    Layer.provideMerge(
      HttpRouter.serve(
        HttpApiBuilder.layer(TestApi).pipe(
          Layer.provide([MarketplaceHandlers, MarketplaceStreamHandlers]),
          Layer.provide([ErrorEnvelopeLive, AuthorizationTest])
        ),
        { disableLogger: true }
      )
    ),
    Layer.provideMerge(MarketplaceServices),
    Layer.provideMerge(NodeHttpServer.layer(http.createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config)))
  )

export interface SseClient {
  readonly status: Promise<number>
  readonly headers: Promise<http.IncomingHttpHeaders>
  readonly events: Array<{ readonly at: number; readonly data: Record<string, unknown> }>
  readonly comments: Array<string>
  readonly close: () => void
}

/** A plain SSE reader: `data:` lines become events, `:` lines comments. */
export const openSse = (url: string): SseClient => {
  const events: SseClient["events"] = []
  const comments: Array<string> = []
  let resolveStatus!: (n: number) => void
  let resolveHeaders!: (h: http.IncomingHttpHeaders) => void
  const status = new Promise<number>((r) => (resolveStatus = r))
  const headers = new Promise<http.IncomingHttpHeaders>((r) => (resolveHeaders = r))
  const req = http.get(url, { agent: false }, (res) => {
    resolveStatus(res.statusCode ?? 0)
    resolveHeaders(res.headers)
    res.setEncoding("utf8")
    let buffer = ""
    res.on("data", (chunk: string) => {
      buffer += chunk
      let i: number
      while ((i = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, i)
        buffer = buffer.slice(i + 1)
        if (line.startsWith("data: ")) events.push({ at: performance.now(), data: JSON.parse(line.slice(6)) })
        else if (line.startsWith(":")) comments.push(line.slice(1).trim())
      }
    })
    res.on("error", () => {})
  })
  req.on("error", () => {})
  return { status, headers, events, comments, close: () => req.destroy() }
}

export const waitUntil = (check: () => boolean, timeoutMs: number, what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("10 millis")
    }
  })
