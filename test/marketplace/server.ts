/**
 * The marketplace handler groups on a real HTTP server (127.0.0.1, port 0),
 * pointed at a fake upstream, with a stand-in bearer check: the token is the
 * signer's address. The server is the service's `NodeServer` (the stats stream is then
 * served by its node-level route), or with `{ plainServer: true }` a plain node server
 * (every stream through the HttpApi handler). Also a small SSE client over node:http.
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
import { NodeServerLive } from "../../src/api/NodeServer.ts"
import {
  MarketplaceHandlers,
  MarketplaceServices,
  MarketplaceStreamHandlers,
  MarketplaceStreamRoute
} from "../../src/marketplace/Http.ts"
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

export const MarketplaceServerLive = (
  config: Record<string, string>,
  options?: { readonly plainServer?: boolean; readonly accessLog?: boolean }
) =>
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
        { disableLogger: options?.accessLog !== true }
      )
    ),
    Layer.provideMerge(MarketplaceStreamRoute),
    Layer.provideMerge(MarketplaceServices),
    Layer.provideMerge(
      options?.plainServer === true
        ? NodeHttpServer.layer(http.createServer, { port: 0, host: "127.0.0.1" })
        : NodeServerLive({
          maxHeaderBytes: 16 * 1024,
          port: 0,
          host: "127.0.0.1",
          disableLogger: options?.accessLog !== true
        })
    ),
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config)))
  )

export interface SseClient {
  readonly status: Promise<number>
  readonly headers: Promise<http.IncomingHttpHeaders>
  readonly events: Array<{ readonly at: number; readonly data: Record<string, unknown> }>
  readonly comments: Array<string>
  /** Resolves when the server ends the stream (or the connection goes). */
  readonly ended: Promise<void>
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
  let resolveEnded!: () => void
  const ended = new Promise<void>((r) => (resolveEnded = r))
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
    res.on("end", resolveEnded)
    res.on("close", resolveEnded)
  })
  req.on("error", () => {})
  req.on("close", resolveEnded)
  return { status, headers, events, comments, ended, close: () => req.destroy() }
}

/**
 * Waits for `check`, polling every 10 ms. `timeoutMs` is what the wait takes on a quiet machine;
 * the bound is never below 30 s, so a busy machine (load 20+) is slow but not red. How fast the
 * hub answers (disconnect within a second, a change to every subscriber) is measured in
 * bench/marketplace-stream.ts, never asserted here.
 */
export const waitUntil = (check: () => boolean, timeoutMs: number, what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + Math.max(timeoutMs, 30_000)
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("10 millis")
    }
  })

/** Waits until the hub's stats satisfy `check` (same bound as waitUntil). */
export const waitFor = <S>(hub: { readonly stats: Effect.Effect<S> }, check: (stats: S) => boolean, what: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    while (!check(yield* hub.stats)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("10 millis")
    }
  })
