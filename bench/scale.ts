/**
 * How each cost grows with the data (issue 30, item 5). For each size N (default 10k, 100k,
 * 1M; `SCALE_SIZES=10000,100000`): a fresh database seeded in bulk (bench/support/seed-scale.ts:
 * N/10 accounts with 10 entries and 10 grants each, each grant with two reservations, and one account of the benchmark's signer
 * with N entries), the service as a process over it (its own chain outside it, as a deployment
 * has), and:
 *   - `GET /activity` first page and a page 10,000 entries deep, on the N-entry account and on an
 *     account with 10 entries among N/10;
 *   - `GET /delegations` (the owner's, and `role=delegatee`);
 *   - `POST /delegations/{id}/actions` on a fresh grant (made on chain through the service);
 *   - `GET /activity/{id}/proof` of an entry of the N-entry account and of a 10-entry account;
 *   - an anchoring pass after 10,000 heads changed (min(10,000, N/10)), in this process with the
 *     service's own `Anchor` (its anchor transaction on the local chain), and one after the
 *     N-entry account alone moved by one entry;
 *   - the audit append (`AuditChain.append`, this process) on the N-entry account and on a small one.
 * p50/p99 of each (ms), and a table of each figure per size with the growth from the smallest.
 *
 *   npx tsx bench/scale.ts                       (the 1M size takes a few minutes to seed)
 *   SCALE_SIZES=10000,100000 SCALE_SAMPLES=30 npx tsx bench/scale.ts
 */
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Anchor, AnchorLive } from "../src/anchor/Anchor.ts"
import { encodeCursor } from "../src/activity/Activity.ts"
import { ChainsLive } from "../src/App.ts"
import { AuditChain } from "../src/audit/AuditChain.ts"
import { hashToken } from "../src/auth/Sessions.ts"
import { configEnvOf, fromJson, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { runMigrations } from "../src/db/Database.ts"
import { actionsOn, grantThroughService } from "./support/grants.ts"
import { freePort, serviceEnv, startPostgres, startProcess } from "./support/processes.ts"
import { report } from "./support/results.ts"
import { seedScale } from "./support/seed-scale.ts"

const sizes = (process.env.SCALE_SIZES ?? "10000,100000,1000000").split(",").map(Number)
const samples = Number(process.env.SCALE_SAMPLES ?? 40)
/** Anvil's account 9: the anchor transactions of this process (no other part of the run uses it). */
const ANCHOR_KEY = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6"
const CHANGED_HEADS = 10_000

const percentile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}
const timed = async (f: () => Promise<unknown>) => {
  const t0 = performance.now()
  await f()
  return performance.now() - t0
}
/** `count` timed runs of `f` after `warm` untimed ones: p50 and p99 in ms. */
const measure = async (f: () => Promise<unknown>, count = samples, warm = 3) => {
  for (let i = 0; i < warm; i++) await f()
  const times: Array<number> = []
  for (let i = 0; i < count; i++) times.push(await timed(f))
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), n: count }
}

const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const pg = await startPostgres()
type Figure = { p50: number; p99: number; n: number }
const table = new Map<string, Map<number, Figure>>()
const record = (what: string, size: number, f: Figure) => {
  if (!table.has(what)) table.set(what, new Map())
  table.get(what)!.set(size, f)
  console.log(`  ${what.padEnd(58)} p50 ${f.p50.toFixed(2).padStart(9)} ms   p99 ${f.p99.toFixed(2).padStart(9)} ms   (${f.n})`)
}

try {
  for (const size of sizes) {
    const database = `scale_${size}`
    const url = pg.url.replace(/\/postgres$/, `/${database}`)
    await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE DATABASE ${database}`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(pg.url) })), Effect.scoped))

    const signer = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
    const address = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
    const token = network.tokens.usd
    const config = ConfigProvider.layer(ConfigProvider.fromUnknown({ ...configEnvOf(network), ANCHOR_PRIVATE_KEY: ANCHOR_KEY }))
    const db = PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })
    const live = Layer.mergeAll(AuditChain.layer, AnchorLive.pipe(Layer.provide(ChainsLive))).pipe(
      Layer.provideMerge(db),
      Layer.provide(config)
    )

    await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const audit = yield* AuditChain
      const anchor = yield* Anchor
      const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(Effect.orDie(e))
      yield* runMigrations
      const t0 = performance.now()
      const seeded = yield* seedScale({ size, signer, address, chainId: network.chainId, token })
      console.log(`\n== N = ${size}: seeded ${seeded.entries} entries, ${seeded.grants} grants, ${seeded.reservations} reservations, ${seeded.otherAccounts + 1} accounts in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

      // Sessions straight into the table (the sign-in is not what is measured): the big
      // account's signer, and the signer of a small account.
      const small = "acc_scale_1"
      const smallSigner = `0xe${"1".padStart(39, "0")}`
      const tokens = { big: `scale-${crypto.randomUUID()}`, small: `scale-${crypto.randomUUID()}` }
      for (const [who, s] of [[tokens.big, signer], [tokens.small, smallSigner]] as const) {
        yield* sql`INSERT INTO sessions (id, token_hash, signer_address, created_at, expires_at)
                   VALUES (${crypto.randomUUID()}, ${hashToken(who)}, ${s}, now(), now() + interval '1 day')`
      }

      const first = yield* Effect.promise(() => timed(() => run(anchor.anchorRound)))
      record("anchoring pass, every head (first)", size, { p50: first, p99: first, n: 1 })

      const port = yield* Effect.promise(() => freePort())
      // The benchmarks' service settings: sign-in and build rate limits and the sponsorship quota opened.
      const service = yield* Effect.promise(() => startProcess("src/main.ts",
        serviceEnv({ databaseUrl: url, port, networks: network }, { LOG_LEVEL: "warn", ANCHOR_INTERVAL: "0 seconds" }),
        `http://127.0.0.1:${port}/health/ready`, 300))
      try {
        const get = (path: string, token: string) => async () => {
          const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } })
          const body = await res.text()
          if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 300)}`)
          return body
        }
        const deep = (accountId: string, length: number, depth: number) =>
          encodeCursor([[accountId, Math.max(1, length - depth + 1)]])
        const big = seeded.bigAccountId
        const h = (label: string, path: string, tok: string, count = samples) =>
          Effect.promise(() => measure(get(path, tok), count, count <= 5 ? 0 : 3)).pipe(Effect.map((f) => record(label, size, f)))
        yield* h("GET /activity, first page (N-entry account)", `/activity?accountId=${big}&limit=20`, tokens.big)
        yield* h("GET /activity, page 10,000 deep (N-entry account)",
          `/activity?accountId=${big}&limit=20&cursor=${deep(big, size, 10_000)}`, tokens.big)
        yield* h("GET /activity, first page (10-entry account)", `/activity?limit=20`, tokens.small)
        yield* h("GET /delegations (owner: 10 grants)", `/delegations?accountId=${big}`, tokens.big)
        yield* h("GET /delegations?role=delegatee (10 held)", `/delegations?role=delegatee&accountId=${big}`, tokens.big)
        // The decision as the data grows: a delegated action (evaluate, reserve, build) on a
        // fresh grant, made on chain through the service, among the N seeded grants and their
        // 2N reservations (each a different amount: none answered from an open build).
        const grant = yield* Effect.promise(() => grantThroughService({ baseUrl: `http://127.0.0.1:${port}`, net: fromJson(network), name: "scale" }))
        const act = actionsOn(grant, privateKeyToAccount(generatePrivateKey()).address)
        record("POST /delegations/{id}/actions (a fresh grant among N)", size, yield* Effect.promise(() => measure(act, Math.min(samples, 20))))
        // Linear in the anchor's heads and in the account's length (docs/performance.md): fewer samples at the large sizes.
        const proofSamples = size >= 1_000_000 ? 2 : size >= 100_000 ? 5 : samples
        yield* h("GET /activity/{id}/proof (10-entry account)", `/activity/evt_scale_${small}_5/proof`, tokens.small, proofSamples)
        yield* h("GET /activity/{id}/proof (N-entry account)", `/activity/evt_scale_${big}_${Math.ceil(size / 2)}/proof`,
          tokens.big, proofSamples)
      } finally {
        yield* Effect.promise(() => service.stop())
      }

      // An anchoring pass after `changed` heads moved: one entry more on each of them (written
      // as the seed writes, so only the pass is timed), three times over different accounts.
      const changed = Math.min(CHANGED_HEADS, seeded.otherAccounts)
      const passes: Array<number> = []
      for (let rep = 0; rep < 3; rep++) {
        const from = (rep * changed) % seeded.otherAccounts
        yield* sql.unsafe(
          `WITH moved AS (
             UPDATE audit_heads h SET length = h.length + 1,
               head_hash = '0x' || encode(sha256(convert_to(h.account_id || ':moved:' || h.length, 'UTF8')), 'hex')
             WHERE h.account_id IN (SELECT 'acc_scale_' || g FROM generate_series($1::int + 1, $1::int + $2::int) g)
             RETURNING h.account_id, h.length, h.head_hash)
           INSERT INTO audit_entries (id, account_id, chain_index, operation_id, occurred_at, actor, action, chain, chain_id,
                                      status, provenance, prev_hash, hash)
           SELECT 'evt_moved_' || account_id || '_' || length, account_id, length, 'op_moved_' || account_id || '_' || length,
                  now(), 'owner', 'send', 'Local devnet', $3, 'executed', 'offchain_only', '0x' || repeat('00', 32), head_hash
           FROM moved`,
          [from, changed, network.chainId]
        )
        passes.push(yield* Effect.promise(() => timed(() => run(anchor.anchorRound))))
      }
      record(`anchoring pass after ${changed} heads changed`, size, {
        p50: percentile(passes, 0.5),
        p99: percentile(passes, 0.99),
        n: passes.length
      })

      // An anchoring pass after the N-entry account moved by one entry (its history anchored):
      // what a pass over a long account costs once its subtrees are stored (src/audit/StoredTree.ts).
      const bigPasses: Array<number> = []
      for (let rep = 0; rep < 3; rep++) {
        yield* sql.unsafe(
          `WITH moved AS (
             UPDATE audit_heads h SET length = h.length + 1,
               head_hash = '0x' || encode(sha256(convert_to(h.account_id || ':moved:' || h.length, 'UTF8')), 'hex')
             WHERE h.account_id = $1 RETURNING h.account_id, h.length, h.head_hash)
           INSERT INTO audit_entries (id, account_id, chain_index, operation_id, occurred_at, actor, action, chain, chain_id,
                                      status, provenance, prev_hash, hash)
           SELECT 'evt_moved_' || account_id || '_' || length, account_id, length, 'op_moved_' || account_id || '_' || length,
                  now(), 'owner', 'send', 'Local devnet', $2, 'executed', 'offchain_only', '0x' || repeat('00', 32), head_hash
           FROM moved`,
          [seeded.bigAccountId, network.chainId]
        )
        bigPasses.push(yield* Effect.promise(() => timed(() => run(anchor.anchorRound))))
      }
      record("anchoring pass after the N-entry account moved", size, {
        p50: percentile(bigPasses, 0.5),
        p99: percentile(bigPasses, 0.99),
        n: bigPasses.length
      })

      const append = (accountId: string) => {
        let k = 0
        return () => run(audit.append({
          accountId,
          operationId: `op_bench_${accountId}_${k++}_${crypto.randomUUID()}`,
          actor: "owner",
          action: "send",
          amount: 1,
          token: "USDC",
          chain: "Local devnet",
          chainId: network.chainId,
          status: "executed",
          txHash: `0x${"ab".repeat(32)}`
        }))
      }
      record("audit append (N-entry account)", size, yield* Effect.promise(() => measure(append(seeded.bigAccountId))))
      record("audit append (10-entry account)", size, yield* Effect.promise(() => measure(append("acc_scale_2"))))
    }).pipe(Effect.provide(live), Effect.scoped))

    await Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`DROP DATABASE ${database} WITH (FORCE)`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(pg.url) })), Effect.scoped))
  }
} finally {
  await pg.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}

// Each figure per size, and its growth from the smallest size to the largest (p50).
const smallest = Math.min(...sizes)
const largest = Math.max(...sizes)
console.log(`\n| path | ${sizes.map((s) => `N = ${s.toLocaleString("en")} p50 / p99 ms`).join(" | ")} | p50 at N=${largest} over N=${smallest} |`)
console.log(`|---|${sizes.map(() => "---").join("|")}|---|`)
for (const [what, bySize] of table) {
  const cells = sizes.map((s) => {
    const f = bySize.get(s)
    return f === undefined ? "" : `${f.p50.toFixed(2)} / ${f.p99.toFixed(2)}`
  })
  const lo = bySize.get(smallest)
  const hi = bySize.get(largest)
  const growth = lo === undefined || hi === undefined ? "" : `${(hi.p50 / lo.p50).toFixed(2)}×`
  console.log(`| ${what} | ${cells.join(" | ")} | ${growth} |`)
  if (lo !== undefined && hi !== undefined && sizes.length > 1) {
    // The goal: flat or logarithmic. ×(1 + log10(N ratio)) allows for a B-tree's extra level or two.
    const allowed = 1 + Math.log10(largest / smallest)
    report({
      path: `scale: ${what}, N=${largest} over N=${smallest} (p50)`,
      service: hi.p50 / lo.p50,
      baseline: 1,
      unit: "ratio",
      goal: `≤ ${allowed.toFixed(1)}× (flat or log)`,
      met: hi.p50 / lo.p50 <= allowed
    })
  }
}
process.exit(0)
