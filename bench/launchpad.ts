/**
 * Requests/s of `GET /launchpad/tokens?chain=all...` through the real HTTP stack, cached
 * (long TTL) and uncached (TTL 0: every request refreshes from the loopback fake upstream;
 * single flight still merges identical requests that overlap), beside a bare `node:http`
 * handler that serves the same cached JSON. Loopback only; about 70 s. Cached and bare are
 * measured in alternating order over `rounds` rounds (each load warms its side 0.5 s first);
 * the ratio's median and spread are printed.
 *
 *   npx tsx bench/launchpad.ts [seconds-per-phase=4] [concurrency=16] [rounds=5]
 *
 * The load generator runs in a worker thread so it does not share the servers' event loop.
 */
import { Context, Effect, Layer, Logger } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Fake } from "../test/launchpad/harness.ts"
import { launchpadServer, LaunchpadServer } from "../test/launchpad/server.ts"
import { loadFor, type LoadResult } from "./support/load.ts"
import { report, spread } from "./support/results.ts"

const seconds = Number(process.argv[2] ?? 4)
const concurrency = Number(process.argv[3] ?? 16)
const rounds = Number(process.argv[4] ?? 5)
const path = "/launchpad/tokens?chain=all&sort=volume24h&page=2&pageSize=30"

const load = (url: string) => loadFor(url, seconds, concurrency)

const bareServer = (body: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
        const server = createServer((_req, res) => {
          res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
          res.end(body)
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({
            url: `http://127.0.0.1:${port}`,
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

const build = (ttl: string) =>
  Effect.map(
    Layer.build(launchpadServer({ LAUNCHPAD_CACHE_TTL: ttl })),
    (ctx) => ({ server: Context.get(ctx, LaunchpadServer), fake: Context.get(ctx, Fake) })
  )

const program = Effect.gen(function*() {
  const cached = yield* build("1 hour")
  const uncached = yield* build("0 millis")

  const body = yield* Effect.promise(() => fetch(`${cached.server.baseUrl}${path}`).then((r) => r.text()))
  const bare = yield* bareServer(body)

  console.log(`launchpad bench: ${path}`)
  console.log(`  ${seconds} s per phase, ${concurrency} concurrent keep-alive clients, response ${body.length} bytes\n`)

  const cachedUrl = `${cached.server.baseUrl}${path}`
  const bareUrl = `${bare.url}${path}`
  const row = (name: string, r: LoadResult) =>
    console.log(`  ${name.padEnd(34)} ${r.rps.toFixed(0).padStart(8)} req/s   (${r.ok} ok, ${r.failed} failed)`)
  // Both sides warmed under the full load first (the JIT optimizes the service's path only
  // under load: unwarmed, its first round measured ~2/3 of the later ones), then each load
  // warms its side for 0.5 s more (in the worker); rounds alternate the order.
  yield* load(cachedUrl)
  yield* load(bareUrl)
  const ratios: Array<number> = []
  const rates = { cached: [] as Array<number>, bare: [] as Array<number> }
  for (let round = 1; round <= rounds; round++) {
    const first = round % 2 === 1
    const a = yield* load(first ? cachedUrl : bareUrl)
    const b = yield* load(first ? bareUrl : cachedUrl)
    const [rCached, rBare] = first ? [a, b] : [b, a]
    if (rCached.failed > 0) return yield* Effect.die(new Error("the service failed requests under load"))
    row(`#${round} bare node:http, same JSON`, rBare)
    row(`#${round} launchpad, cached`, rCached)
    rates.cached.push(rCached.rps)
    rates.bare.push(rBare.rps)
    ratios.push(rCached.rps / rBare.rps)
  }
  uncached.fake.reset()
  const rUncached = yield* load(`${uncached.server.baseUrl}${path}`)
  const upstreamCalls = uncached.fake.count("/api/virtuals")
  row("launchpad, uncached (TTL 0)", rUncached)
  const s = spread(ratios)
  console.log(`\n  ratio cached / bare:    median ${s.median.toFixed(2)} (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)})  goal ≥ 0.9`)
  console.log(`  ratio uncached / bare:  ${(rUncached.rps / spread(rates.bare).median).toFixed(3)}`)
  console.log(`  uncached: ${upstreamCalls} upstream requests for ${rUncached.ok} answers (3 per refresh; overlapping requests share one)`)
  report({
    path: "GET /launchpad/tokens?chain=all (cached)",
    service: spread(rates.cached).median,
    baseline: spread(rates.bare).median,
    unit: "req/s",
    goal: "≥ 0.9×",
    met: s.median >= 0.9,
    spread: s
  })
})

Effect.runPromise(
  program.pipe(Effect.scoped, Effect.provide(Logger.layer([])))
).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
