/**
 * Audit appends per second beside plain single-row insert transactions per second
 * (pgbench-style: BEGIN; INSERT one row; COMMIT) on the same database in the same run:
 *
 *   - 1 writer:   plain inserts  vs  audit appends on one account
 *   - 64 writers: plain inserts  vs  audit appends over 64 accounts (one each)
 *   - 64 writers on ONE account (every append waits for the head lock), for scale
 *
 *   npx tsx bench/audit.ts [seconds-per-phase=2] [rounds=3]
 *
 * Both sides are warmed first; each round measures plain and audit back to back, the
 * order alternating between rounds; the ratio's median and spread over the rounds are printed.
 *
 * Uses DATABASE_URL when set (migrates it; bench rows are deleted afterwards), otherwise
 * a private embedded PostgreSQL under /tmp that is removed at the end. About 45 s.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Logger, Redacted, References } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../src/audit/AuditChain.ts"
import { runMigrations } from "../src/db/Database.ts"
import { startPostgres, treeCpuMicros } from "./support/processes.ts"
import { report, spread } from "./support/results.ts"

const seconds = Number(process.argv[2] ?? 2)
const rounds = Number(process.argv[3] ?? 3)
const run = `b${process.pid}_${Date.now().toString(36)}`

const external = process.env.DATABASE_URL
const pg = external === undefined ? await startPostgres() : undefined
const url = external ?? pg!.url

interface Phase {
  readonly name: string
  readonly ops: number
  readonly perSecond: number
  /** CPU per operation (µs): this process and, when embedded, PostgreSQL's processes. */
  readonly cpuPerOp: number
}

/** CPU used so far (µs) by this process and by the embedded PostgreSQL (unknown under DATABASE_URL). */
const cpuNow = () => {
  const own = process.cpuUsage()
  return { node: own.user + own.system, pg: pg === undefined ? 0 : treeCpuMicros(pg.pid) }
}

const program = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const chain = yield* AuditChain
  yield* runMigrations
  yield* sql`CREATE TABLE IF NOT EXISTS bench_plain (
    id bigserial PRIMARY KEY, account_id text NOT NULL, payload text NOT NULL, created_at timestamptz NOT NULL)`
  const accounts = Array.from({ length: 64 }, (_, i) => `acc_${run}_${i}`)
  for (const [i, id] of accounts.entries()) {
    yield* sql`INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
      VALUES (${id}, ${`0x${run.padEnd(38, "0").slice(0, 38)}${i.toString(16).padStart(2, "0")}`}, ${i}, 'bench',
        ${`0x${(run + i).padEnd(40, "f").slice(0, 40)}`}, 31337, 'bench', 'bench', 'counterfactual', now())`
  }

  /** `writers` loops for `seconds`, each running `op(writer, k)` back to back. */
  const phase = (
    name: string,
    writers: number,
    op: (writer: number, k: number) => Effect.Effect<unknown, unknown>,
    forSeconds = seconds
  ) =>
    Effect.gen(function*() {
      // Warm the pool's connections first.
      yield* Effect.forEach(Array.from({ length: writers }), () => sql`SELECT 1`, { concurrency: "unbounded" })
      const end = Date.now() + forSeconds * 1000
      const started = Date.now()
      const cpu0 = cpuNow()
      const counts = yield* Effect.forEach(
        Array.from({ length: writers }, (_, w) => w),
        (w) =>
          Effect.gen(function*() {
            let k = 0
            while (Date.now() < end) {
              yield* op(w, k)
              k++
            }
            return k
          }),
        { concurrency: "unbounded" }
      )
      const elapsed = (Date.now() - started) / 1000
      const ops = counts.reduce((a, b) => a + b, 0)
      const cpu1 = cpuNow()
      const node = (cpu1.node - cpu0.node) / ops
      const db = (cpu1.pg - cpu0.pg) / ops
      const result: Phase = { name, ops, perSecond: ops / elapsed, cpuPerOp: node + db }
      console.log(
        `${name.padEnd(50)} ${result.perSecond.toFixed(0).padStart(8)} /s  (${ops} in ${elapsed.toFixed(1)} s)  CPU/op ${
          node.toFixed(0).padStart(4)
        } µs node + ${db.toFixed(0).padStart(4)} µs pg`
      )
      return result
    })

  const plain = (w: number, k: number) =>
    sql.withTransaction(
      sql`INSERT INTO bench_plain (account_id, payload, created_at) VALUES (${accounts[w]!}, ${`${run}:${w}:${k}`}, now())`
    )
  const append = (tag: string, account: (w: number) => string) => (w: number, k: number) =>
    chain.append({
      accountId: account(w),
      operationId: `op_${run}_${tag}_${w}_${k}`,
      actor: "owner",
      action: "send",
      amount: 10,
      token: "USDC",
      chain: "local",
      chainId: 31337,
      status: "executed",
      txHash: `0x${"ab".repeat(32)}`
    })

  console.log(`PostgreSQL: ${external === undefined ? "embedded (private, /tmp)" : "DATABASE_URL"}; ${seconds} s per phase, ${rounds} rounds\n`)
  // Warm both sides (JIT, pool connections, the function's plan) before measuring.
  yield* phase("warm: plain", 8, plain, 1)
  yield* phase("warm: audit", 8, append("warm", (w) => accounts[w]!), 1)
  const r1: Array<number> = []
  const r64: Array<number> = []
  const rHot: Array<number> = []
  // CPU per operation, plain over audit: what the throughput ratio tends to when both sides are CPU-bound.
  const c1: Array<number> = []
  const c64: Array<number> = []
  for (let round = 1; round <= rounds; round++) {
    // Alternate which side goes first, so drift on a shared machine hits both alike.
    const first = round % 2 === 1
    const pair = <E,>(a: Effect.Effect<Phase, E>, b: Effect.Effect<Phase, E>) =>
      first ? Effect.all([a, b]) : Effect.map(Effect.all([b, a]), ([y, x]) => [x, y] as const)
    const [plain1, audit1] = yield* pair(
      phase(`#${round} plain insert txn, 1 writer`, 1, plain),
      phase(`#${round} audit append, 1 writer, 1 account`, 1, append(`one${round}`, () => accounts[0]!))
    )
    const [plain64, audit64] = yield* pair(
      phase(`#${round} plain insert txn, 64 writers`, 64, plain),
      phase(`#${round} audit append, 64 writers, 64 accounts`, 64, append(`many${round}`, (w) => accounts[w]!))
    )
    const hot64 = yield* phase(`#${round} audit append, 64 writers, 1 account`, 64, append(`hot${round}`, () => accounts[1]!))
    r1.push(audit1.perSecond / plain1.perSecond)
    r64.push(audit64.perSecond / plain64.perSecond)
    c1.push(plain1.cpuPerOp / audit1.cpuPerOp)
    c64.push(plain64.cpuPerOp / audit64.cpuPerOp)
    rHot.push(hot64.perSecond / plain64.perSecond)
  }

  for (const id of accounts) {
    const v = yield* chain.verify(id)
    if (!v.ok) return yield* Effect.die(new Error(`chain ${id} broken after the benchmark: ${v.broken.message}`))
  }
  console.log(`\nall 64 chains verify`)
  const summary = (name: string, ratios: ReadonlyArray<number>, goal: number) => {
    const s = spread(ratios)
    console.log(`ratio audit/plain, ${name.padEnd(26)} median ${s.median.toFixed(2)}  (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)})  goal ≥ ${goal}`)
    report({ path: `audit append, ${name}`, service: s.median, baseline: 1, unit: "ratio", goal: `≥ ${goal}×`, met: s.median >= goal, spread: s })
  }
  summary("1 writer", r1, 0.8)
  summary("64 writers, 64 accounts", r64, 0.8)
  summary("64 writers, 1 account", rHot, 0.5)
  if (pg !== undefined) {
    for (const [name, ratios] of [["1 writer", c1], ["64 writers, 64 accounts", c64]] as const) {
      const s = spread(ratios)
      console.log(`CPU per op, plain/audit, ${name.padEnd(24)} median ${s.median.toFixed(2)}  (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)})`)
    }
  }

  // Leave a shared database as it was.
  yield* sql`DELETE FROM audit_entries WHERE account_id IN ${sql.in(accounts)}`
  yield* sql`DELETE FROM audit_heads WHERE account_id IN ${sql.in(accounts)}`
  yield* sql`DELETE FROM accounts WHERE id IN ${sql.in(accounts)}`
  yield* sql`DROP TABLE bench_plain`
})

try {
  await Effect.runPromise(
    program.pipe(
      Effect.provide(AuditChain.layer.pipe(Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 70 })))),
      Effect.provide(Logger.layer([Logger.consolePretty()])),
      Effect.provideService(References.MinimumLogLevel, "Warn"),
      Effect.scoped
    )
  )
} finally {
  await pg?.stop()
}
