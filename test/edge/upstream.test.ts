/**
 * The shared upstream GET against real loopback servers: a body over the cap is refused
 * without being read whole (declared or streamed), a wrong shape is 502, and the
 * marketplace never answers a broken list as an empty one.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { make as makeMarketplace } from "../../src/marketplace/MarketplaceUpstream.ts"
import { getDecoded, getJson } from "../../src/api/Upstream.ts"
import { Schema } from "effect"

interface Served {
  readonly url: string
  /** Bytes the server managed to write before the client stopped reading. */
  readonly written: () => number
}

/** A loopback server; `handler` answers every request. */
const serve = (handler: (req: http.IncomingMessage, res: http.ServerResponse, count: (n: number) => void) => void) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Served & { readonly server: http.Server }>((resolve) => {
        let written = 0
        const server = http.createServer((req, res) => handler(req, res, (n) => (written += n)))
        server.listen(0, "127.0.0.1", () => {
          const port = (server.address() as AddressInfo).port
          resolve({ server, url: `http://127.0.0.1:${port}`, written: () => written })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  )

/** Streams `total` bytes of a JSON array in 64 KiB chunks, honouring back-pressure, without Content-Length. */
const endless = (total: number) => (_req: http.IncomingMessage, res: http.ServerResponse, count: (n: number) => void) => {
  res.writeHead(200, { "content-type": "application/json" })
  const chunk = Buffer.from("1,".repeat(32 * 1024))
  let sent = 0
  res.write("[")
  const pump = () => {
    while (sent < total) {
      sent += chunk.length
      count(chunk.length)
      if (!res.write(chunk)) return void res.once("drain", pump)
    }
    res.end("1]")
  }
  res.on("error", () => {})
  pump()
}

const options = { name: "The test upstream", timeout: Duration.seconds(10), retries: 0, maxBodyBytes: 1024 * 1024 }

describe("shared upstream GET", () => {
  it.live("a streamed 100 MB answer is refused at the cap (502) without being read", () =>
    Effect.gen(function*() {
      const upstream = yield* serve(endless(100 * 1024 * 1024))
      const client = yield* HttpClient.HttpClient
      const error = yield* getJson(client, HttpClientRequest.get(upstream.url), options).pipe(Effect.flip)
      assert.strictEqual(error._tag, "UpstreamUnavailable")
      assert.include(error.message, "more than 1048576 bytes")
      yield* Effect.sleep("200 millis")
      // The server got stuck on back-pressure far below 100 MB: the rest was never read.
      assert.isBelow(upstream.written(), 20 * 1024 * 1024)
    }).pipe(Effect.scoped, Effect.provide(FetchHttpClient.layer)))

  it.live("a declared Content-Length over the cap is refused before reading; under it is read", () =>
    Effect.gen(function*() {
      const big = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": String(2 * 1024 * 1024) })
        res.end("[" + "1,".repeat(1024 * 1024 - 1) + "1]")
      })
      const client = yield* HttpClient.HttpClient
      const refused = yield* getJson(client, HttpClientRequest.get(big.url), options).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "UpstreamUnavailable")
      const small = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ ok: [1, 2, 3] }))
      })
      const answer = yield* getDecoded(
        client,
        HttpClientRequest.get(small.url),
        Schema.Struct({ ok: Schema.Array(Schema.Number) }),
        options
      )
      assert.deepStrictEqual(answer.ok, [1, 2, 3])
      const shape = yield* getDecoded(client, HttpClientRequest.get(small.url), Schema.Struct({ other: Schema.String }), options)
        .pipe(Effect.flip)
      assert.strictEqual(shape._tag, "UpstreamUnavailable")
      assert.include(shape.message, "unexpected shape")
    }).pipe(Effect.scoped, Effect.provide(FetchHttpClient.layer)))

  it.live("the marketplace answers a list of non-agents with 502, and an over-cap listing too", () =>
    Effect.gen(function*() {
      const garbage = yield* serve((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ data: [{ nope: 1 }, { name: "no wallet" }], meta: { pagination: { total: 2 } } }))
      })
      const config = { apiUrl: garbage.url, authUrl: garbage.url, timeout: Duration.seconds(5), retries: 0 }
      const marketplace = yield* makeMarketplace(config)
      const listing = yield* marketplace.leaderboard({ start: 0, limit: 25 }).pipe(Effect.flip)
      assert.strictEqual(listing._tag, "UpstreamUnavailable")
      const search = yield* marketplace.search({ query: "x" }).pipe(Effect.flip)
      assert.strictEqual(search._tag, "UpstreamUnavailable")

      const huge = yield* serve(endless(100 * 1024 * 1024))
      const capped = yield* makeMarketplace({ ...config, apiUrl: huge.url })
      const tooBig = yield* capped.leaderboard({ start: 0, limit: 25 }).pipe(Effect.flip)
      assert.strictEqual(tooBig._tag, "UpstreamUnavailable")
      assert.include(tooBig.message, "more than")
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        FetchHttpClient.layer,
        ConfigProvider.layer(ConfigProvider.fromUnknown({ UPSTREAM_MAX_BODY_BYTES: "1048576" }))
      ))
    ))
})
