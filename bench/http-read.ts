/**
 * Requests per second of an authenticated read (`GET /accounts`: session lookup +
 * accounts query) through the service, against a bare `node:http` + `pg` handler
 * doing the same queries on the same database, in the same run. Prints the ratio, and the
 * same read on Effect's HttpRouter + sql-pg with nothing else (effect-read-server.ts): the
 * floor the stack itself sets. Each side's server CPU per request is printed too.
 *
 * Both sides are warmed first; then ROUNDS rounds (default 5) of DURATION seconds per side
 * (default 5), the order alternating, and the ratio's median and spread are printed.
 *
 *   npx tsx bench/http-read.ts            (about 80 s; loopback only)
 *   DURATION=10 ROUNDS=5 CONNECTIONS=64 npx tsx bench/http-read.ts
 */
import autocannon from "autocannon"
import { Effect, Exit, Scope } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { configEnvOf, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { signIn } from "../src/client/signIn.ts"
import { cpuMicros, freePort, startPostgres, startProcess } from "./support/processes.ts"
import { report, spread } from "./support/results.ts"

const duration = Number(process.env.DURATION ?? 5)
const rounds = Number(process.env.ROUNDS ?? 5)
const warmSeconds = 3
const connections = Number(process.env.CONNECTIONS ?? 32)

const load = (url: string, token: string, seconds: number) =>
  new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      { url, connections, duration: seconds, headers: { authorization: `Bearer ${token}` } },
      (err, result) => (err ? reject(err) : resolve(result))
    )
  )

// The chain runs here, as a deployment's would run elsewhere: not as the service's children
// (its embedded default), whose work would count as the service's.
const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const pg = await startPostgres()
const servicePort = await freePort()
const barePort = await freePort()
const floorPort = await freePort()
const service = await startProcess(
  "src/main.ts",
  {
    DATABASE_URL: pg.url,
    PORT: String(servicePort),
    LOG_FORMAT: "json",
    SIWE_DOMAIN: "bench.local",
    SIWE_URI: "http://bench.local",
    // The benchmark signs in from one address: the per-IP sign-in limits are off here.
    RATE_LIMIT_NONCE_PER_MINUTE: "0",
    RATE_LIMIT_SESSION_PER_MINUTE: "0",
    ...configEnvOf(network)
  },
  `http://127.0.0.1:${servicePort}/health/ready`
)
try {
  const session = await Effect.runPromise(signIn(`http://127.0.0.1:${servicePort}`, privateKeyToAccount(generatePrivateKey())))
  const bare = await startProcess("bench/support/bare-read-server.ts", { DATABASE_URL: pg.url, PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`)
  const floor = await startProcess("bench/support/effect-read-server.ts", { DATABASE_URL: pg.url, PORT: String(floorPort) }, `http://127.0.0.1:${floorPort}/`)
  try {
    const sides = {
      service: { name: "service (HttpApi + sql-pg)", child: service.child, script: "src/main.ts", url: `http://127.0.0.1:${servicePort}/accounts` },
      floor: { name: "Effect HttpRouter + sql-pg, bare", child: floor.child, script: "effect-read-server", url: `http://127.0.0.1:${floorPort}/accounts` },
      bare: { name: "bare node:http + pg", child: bare.child, script: "bare-read-server", url: `http://127.0.0.1:${barePort}/accounts` }
    }
    type Side = keyof typeof sides
    const row = (name: string, r: autocannon.Result, cpu: number) =>
      `${name.padEnd(34)} ${r.requests.average.toFixed(0).padStart(8)} req/s   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   ${cpu.toFixed(0).padStart(4)} µs CPU/req   errors ${r.errors + r.non2xx}`
    console.log(`GET /accounts, ${connections} connections, ${duration} s per side per round, ${rounds} rounds, same PostgreSQL`)
    // Warm every side (JIT, pools) before measuring.
    for (const side of Object.values(sides)) await load(side.url, session.token, warmSeconds)
    const rates = { service: [] as Array<number>, floor: [] as Array<number>, bare: [] as Array<number> }
    const cpu = { service: [] as Array<number>, floor: [] as Array<number>, bare: [] as Array<number> }
    const idleMicrosPerSecond: Array<number> = []
    for (let round = 1; round <= rounds; round++) {
      // Alternate the order, so drift on a shared machine hits every side alike.
      const order: ReadonlyArray<Side> = round % 2 === 1 ? ["service", "floor", "bare"] : ["bare", "floor", "service"]
      for (const side of order) {
        const before = cpuMicros(sides[side].child, sides[side].script)
        // The service's own background (chain follower, pollers) while another side is loaded.
        const serviceBefore = cpuMicros(service.child, "src/main.ts")
        const started = performance.now()
        const r = await load(sides[side].url, session.token, duration)
        if (r.errors + r.non2xx > 0) throw new Error(`${sides[side].name} answered errors under load`)
        if (side !== "service") {
          idleMicrosPerSecond.push((cpuMicros(service.child, "src/main.ts") - serviceBefore) / ((performance.now() - started) / 1000))
        }
        cpu[side].push((cpuMicros(sides[side].child, sides[side].script) - before) / r.requests.total)
        rates[side].push(r.requests.average)
        console.log(row(`#${round} ${sides[side].name}`, r, cpu[side].at(-1)!))
      }
    }
    const ratio = (a: Side, b: Side) => spread(rates[a].map((x, i) => x / rates[b][i]!))
    const s = ratio("service", "bare")
    const f = ratio("floor", "bare")
    console.log(`CPU per request (server process, median): service ${spread(cpu.service).median.toFixed(0)} µs, ` +
      `Effect floor ${spread(cpu.floor).median.toFixed(0)} µs, bare ${spread(cpu.bare).median.toFixed(0)} µs`)
    console.log(`service CPU while idle (another side loaded): median ${(spread(idleMicrosPerSecond).median / 1000).toFixed(1)} ms/s ` +
      `(${(spread(idleMicrosPerSecond).min / 1000).toFixed(1)}–${(spread(idleMicrosPerSecond).max / 1000).toFixed(1)})`)
    console.log(`ratio Effect floor / bare: median ${f.median.toFixed(2)} (min ${f.min.toFixed(2)}, max ${f.max.toFixed(2)})`)
    console.log(`ratio service / bare: median ${s.median.toFixed(2)} (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)})  goal ≥ 0.9`)
    report({
      path: "GET /accounts (authenticated read)",
      service: spread(rates.service).median,
      baseline: spread(rates.bare).median,
      unit: "req/s",
      goal: "≥ 0.9×",
      met: s.median >= 0.9,
      spread: s
    })
    report({
      path: "GET /accounts on Effect HttpRouter + sql-pg alone (the floor)",
      service: spread(rates.floor).median,
      baseline: spread(rates.bare).median,
      unit: "req/s",
      goal: "(reference)",
      met: true,
      spread: f
    })
  } finally {
    await floor.stop()
    await bare.stop()
  }
} finally {
  await service.stop()
  await pg.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
