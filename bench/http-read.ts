/**
 * Requests per second of an authenticated read (`GET /accounts`: session lookup +
 * accounts query) through the service, against a bare `node:http` + `pg` handler
 * doing the same queries on the same database, in the same run. Prints the ratio.
 *
 *   npx tsx bench/http-read.ts            (about 30 s; loopback only)
 *   DURATION=20 CONNECTIONS=64 npx tsx bench/http-read.ts
 */
import autocannon from "autocannon"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../src/client/signIn.ts"
import { freePort, startPostgres, startProcess } from "./support/processes.ts"

const duration = Number(process.env.DURATION ?? 10)
const connections = Number(process.env.CONNECTIONS ?? 32)

const load = (url: string, token: string) =>
  new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      { url, connections, duration, headers: { authorization: `Bearer ${token}` } },
      (err, result) => (err ? reject(err) : resolve(result))
    )
  )

const pg = await startPostgres()
const servicePort = await freePort()
const barePort = await freePort()
const service = await startProcess(
  "src/main.ts",
  { DATABASE_URL: pg.url, PORT: String(servicePort), LOG_FORMAT: "json", SIWE_DOMAIN: "bench.local", SIWE_URI: "http://bench.local" },
  `http://127.0.0.1:${servicePort}/health/ready`
)
try {
  const session = await Effect.runPromise(signIn(`http://127.0.0.1:${servicePort}`, privateKeyToAccount(generatePrivateKey())))
  const bare = await startProcess("bench/support/bare-read-server.ts", { DATABASE_URL: pg.url, PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`)
  try {
    // Warm both (JIT, pools) before measuring.
    await load(`http://127.0.0.1:${servicePort}/accounts`, session.token)
    const serviceResult = await load(`http://127.0.0.1:${servicePort}/accounts`, session.token)
    const bareResult = await load(`http://127.0.0.1:${barePort}/accounts`, session.token)
    const row = (name: string, r: autocannon.Result) =>
      `${name.padEnd(28)} ${r.requests.average.toFixed(0).padStart(8)} req/s   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   errors ${r.errors + r.non2xx}`
    console.log(`GET /accounts, ${connections} connections, ${duration} s each, same PostgreSQL`)
    console.log(row("service (HttpApi + sql-pg)", serviceResult))
    console.log(row("bare node:http + pg", bareResult))
    console.log(`ratio service / bare: ${(serviceResult.requests.average / bareResult.requests.average).toFixed(2)}`)
  } finally {
    await bare.stop()
  }
} finally {
  await service.stop()
  await pg.stop()
}
