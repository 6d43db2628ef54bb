/**
 * Requests per second of an authenticated read (`GET /accounts`: session lookup +
 * accounts query) through the service, against a bare `node:http` + `pg` handler
 * doing the same queries on the same database, in the same run. Prints the ratio.
 *
 * Both sides are warmed first; then ROUNDS rounds (default 3) of DURATION seconds per side
 * (default 5), the order alternating, and the ratio's median and spread are printed.
 *
 *   npx tsx bench/http-read.ts            (about 50 s; loopback only)
 *   DURATION=10 ROUNDS=5 CONNECTIONS=64 npx tsx bench/http-read.ts
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../src/client/signIn.ts"
import { cpuMicros, freePort, startPostgres, startProcess } from "./support/processes.ts"
import { report, spread } from "./support/results.ts"

const duration = Number(process.env.DURATION ?? 5)
const rounds = Number(process.env.ROUNDS ?? 3)
const warmSeconds = 3
const connections = Number(process.env.CONNECTIONS ?? 32)

const load = (url: string, token: string, seconds: number) =>
  new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      { url, connections, duration: seconds, headers: { authorization: `Bearer ${token}` } },
      (err, result) => (err ? reject(err) : resolve(result))
    )
  )

const pg = await startPostgres()
const servicePort = await freePort()
const barePort = await freePort()
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
    RATE_LIMIT_SESSION_PER_MINUTE: "0"
  },
  `http://127.0.0.1:${servicePort}/health/ready`
)
try {
  const session = await Effect.runPromise(signIn(`http://127.0.0.1:${servicePort}`, privateKeyToAccount(generatePrivateKey())))
  const bare = await startProcess("bench/support/bare-read-server.ts", { DATABASE_URL: pg.url, PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`)
  try {
    const serviceUrl = `http://127.0.0.1:${servicePort}/accounts`
    const bareUrl = `http://127.0.0.1:${barePort}/accounts`
    const row = (name: string, r: autocannon.Result) =>
      `${name.padEnd(34)} ${r.requests.average.toFixed(0).padStart(8)} req/s   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   errors ${r.errors + r.non2xx}`
    console.log(`GET /accounts, ${connections} connections, ${duration} s per side per round, ${rounds} rounds, same PostgreSQL`)
    // Warm both sides (JIT, pools) before measuring.
    await load(serviceUrl, session.token, warmSeconds)
    await load(bareUrl, session.token, warmSeconds)
    const ratios: Array<number> = []
    const rates = { service: [] as Array<number>, bare: [] as Array<number> }
    const cpu = { service: [] as Array<number>, bare: [] as Array<number> }
    for (let round = 1; round <= rounds; round++) {
      // Alternate which side goes first, so drift on a shared machine hits both alike.
      const order = round % 2 === 1 ? (["service", "bare"] as const) : (["bare", "service"] as const)
      const results: Partial<Record<"service" | "bare", autocannon.Result>> = {}
      for (const side of order) {
        const child = side === "service" ? service.child : bare.child
        const before = cpuMicros(child)
        results[side] = await load(side === "service" ? serviceUrl : bareUrl, session.token, duration)
        cpu[side].push((cpuMicros(child) - before) / results[side]!.requests.total)
      }
      const r = results as Record<"service" | "bare", autocannon.Result>
      if (r.service.errors + r.service.non2xx > 0) throw new Error("the service answered errors under load")
      console.log(row(`#${round} service (HttpApi + sql-pg)`, r.service))
      console.log(row(`#${round} bare node:http + pg`, r.bare))
      rates.service.push(r.service.requests.average)
      rates.bare.push(r.bare.requests.average)
      ratios.push(r.service.requests.average / r.bare.requests.average)
    }
    const s = spread(ratios)
    console.log(`CPU per request (server process, median): service ${spread(cpu.service).median.toFixed(0)} µs, bare ${spread(cpu.bare).median.toFixed(0)} µs`)
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
  } finally {
    await bare.stop()
  }
} finally {
  await service.stop()
  await pg.stop()
}
