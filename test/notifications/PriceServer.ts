/**
 * A price source on loopback speaking the CoinGecko `simple/price` format, whose
 * prices the test moves.
 */
import { Context, Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export interface PriceServerShape {
  /** The full endpoint, as `PRICE_SOURCE_URL` takes it. */
  readonly url: string
  readonly setPrice: (id: string, usd: number | undefined) => void
  /** While set, every request answers 500. */
  readonly setFailing: (failing: boolean) => void
  /** Requests answered so far. */
  readonly requests: () => number
  /** The last request's headers (to check the API key header). */
  readonly lastHeaders: () => Record<string, string | string[] | undefined>
}

export class PriceServer extends Context.Service<PriceServer, PriceServerShape>()("test/PriceServer") {
  static readonly layer = (initial: Record<string, number> = { "usd-coin": 1, tether: 1 }) =>
    Layer.effect(
      PriceServer,
      Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<PriceServerShape & { close: () => Promise<void> }>((resolve) => {
            const prices = new Map(Object.entries(initial))
            let failing = false
            let count = 0
            let headers: Record<string, string | string[] | undefined> = {}
            const server = createServer((req, res) => {
              count++
              headers = req.headers
              const url = new URL(req.url ?? "/", "http://localhost")
              if (failing || url.pathname !== "/api/v3/simple/price" || url.searchParams.get("vs_currencies") !== "usd") {
                res.writeHead(failing ? 500 : 404, { "content-type": "application/json" })
                res.end(JSON.stringify({ error: "no" }))
                return
              }
              const body: Record<string, { usd: number }> = {}
              for (const id of (url.searchParams.get("ids") ?? "").split(",")) {
                const usd = prices.get(id)
                if (usd !== undefined) body[id] = { usd }
              }
              res.writeHead(200, { "content-type": "application/json" })
              res.end(JSON.stringify(body))
            })
            server.listen(0, "127.0.0.1", () => {
              const { port } = server.address() as AddressInfo
              resolve({
                url: `http://127.0.0.1:${port}/api/v3/simple/price`,
                setPrice: (id, usd) => (usd === undefined ? prices.delete(id) : prices.set(id, usd)),
                setFailing: (f) => {
                  failing = f
                },
                requests: () => count,
                lastHeaders: () => headers,
                close: () =>
                  new Promise<void>((done) => {
                    server.closeAllConnections()
                    server.close(() => done())
                  })
              })
            })
          })
        ),
        (s) => Effect.promise(() => s.close())
      )
    )
}

/** Waits (polling) until `check` holds; fails the test after `ms`. */
export const eventually = <A, R>(what: string, effect: Effect.Effect<A, never, R>, check: (a: A) => boolean, ms = 5000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    for (;;) {
      const a = yield* effect
      if (check(a)) return a
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("20 millis")
    }
  })

/** Waits until the price server has answered `n` more requests (polls happened). */
export const polls = (server: PriceServerShape, n: number) =>
  Effect.suspend(() => {
    const target = server.requests() + n
    return eventually(`${n} polls`, Effect.sync(() => server.requests()), (c) => c >= target)
  })
