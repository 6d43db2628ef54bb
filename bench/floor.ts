/**
 * The framework's floor: requests/s of the same cached JSON served by (1) bare `node:http`,
 * (2) the smallest Effect 4 server (`HttpRouter.add` on `NodeHttpServer`, no HttpApi, no
 * middleware, logger off) and (3) the service's launchpad endpoint through the whole stack
 * (HttpApi, query Schema, the edge middleware, the handler's cached bytes). Same process,
 * same load generator (a separate process), rounds alternating the order. Besides requests/s
 * it prints the server's CPU time per request (steadier than requests/s on a shared machine).
 *
 *   npx tsx bench/floor.ts [seconds-per-phase=3] [concurrency=16] [rounds=3]
 *
 * What it tells: how much of the gap between (3) and (1) is the Effect HTTP server itself
 * ((2) vs (1)), and how much is what the service adds ((3) vs (2)). About 50 s.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Logger } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { launchpadServer, LaunchpadServer } from "../test/launchpad/server.ts"
import { loadWithCpu } from "./support/load.ts"
import { report, spread } from "./support/results.ts"

const seconds = Number(process.argv[2] ?? 3)
const concurrency = Number(process.argv[3] ?? 16)
const rounds = Number(process.argv[4] ?? 3)
const path = "/launchpad/tokens?chain=all&sort=volume24h&page=2&pageSize=30"
const load = (url: string) => loadWithCpu(url, seconds, concurrency)

const bare = (body: Uint8Array) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; server: ReturnType<typeof createServer> }>((resolve) => {
        const server = createServer((_req, res) => {
          res.writeHead(200, { "content-type": "application/json", "content-length": body.byteLength })
          res.end(body)
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }))
      })
    ),
    ({ server }) => Effect.sync(() => { server.closeAllConnections(); server.close() })
  )

class Minimal extends Context.Service<Minimal, { readonly url: string }>()("bench/floor/Minimal") {}

const minimal = (body: Uint8Array) =>
  Layer.effect(Minimal, Effect.gen(function*() {
    const address = (yield* HttpServer.HttpServer).address
    if (address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected TCP"))
    return { url: `http://127.0.0.1:${address.port}` }
  })).pipe(
    Layer.provideMerge(HttpRouter.serve(
      HttpRouter.add("GET", "/launchpad/tokens", HttpServerResponse.uint8Array(body, { contentType: "application/json" })),
      { disableLogger: true, disableListenLog: true }
    )),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
  )

const program = Effect.gen(function*() {
  const full = Context.get(yield* Layer.build(launchpadServer({ LAUNCHPAD_CACHE_TTL: "1 hour" })), LaunchpadServer)
  const body = new Uint8Array(yield* Effect.promise(() => fetch(`${full.baseUrl}${path}`).then((r) => r.arrayBuffer())))
  const b = yield* bare(body)
  const m = Context.get(yield* Layer.build(minimal(body)), Minimal)
  const sides = [
    { name: "bare node:http", url: `${b.url}${path}` },
    { name: "Effect HttpRouter, one route", url: `${m.url}${path}` },
    { name: "service (HttpApi + edge + handler)", url: `${full.baseUrl}${path}` }
  ]
  console.log(`floor bench: ${path}, ${body.byteLength} bytes, ${concurrency} keep-alive clients, ${seconds} s per phase\n`)
  // Every side warmed under the full load first (unwarmed, the service's first round spent
  // ~1.5× the CPU per request of the later ones: its JIT had not optimized the path yet).
  for (const side of sides) yield* load(side.url)
  const rates: Array<Array<number>> = sides.map(() => [])
  const cpu: Array<Array<number>> = sides.map(() => [])
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? [0, 1, 2] : [2, 1, 0]
    for (const i of order) {
      const r = yield* load(sides[i]!.url)
      if (r.failed > 0) return yield* Effect.die(new Error(`${sides[i]!.name} failed requests`))
      rates[i]!.push(r.rps)
      cpu[i]!.push(r.cpuUsPerRequest)
      console.log(`  #${round} ${sides[i]!.name.padEnd(36)} ${r.rps.toFixed(0).padStart(8)} req/s  ${r.cpuUsPerRequest.toFixed(0).padStart(4)} µs CPU/request`)
    }
  }
  const ratio = (i: number, j: number) => spread(rates[i]!.map((r, k) => r / rates[j]![k]!))
  const line = (label: string, s: ReturnType<typeof spread>) =>
    console.log(`  ${label.padEnd(44)} ${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)})`)
  console.log("")
  sides.forEach((side, i) => console.log(`  ${`CPU per request, ${side.name}`.padEnd(44)} ${spread(cpu[i]!).median.toFixed(0)} µs`))
  line("Effect minimal / bare", ratio(1, 0))
  line("service / Effect minimal", ratio(2, 1))
  line("service / bare", ratio(2, 0))
  report({
    path: "Effect HttpRouter one route vs bare node (the floor)",
    service: spread(rates[1]!).median,
    baseline: spread(rates[0]!).median,
    unit: "req/s",
    goal: "(reference)",
    met: true,
    spread: ratio(1, 0)
  })
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Logger.layer([])))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
