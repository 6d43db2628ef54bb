/**
 * The request histogram's cost per request (issue 46, item 1), in this process: prom-client's
 * `labels(...).observe` (labels validated and hashed on every call) against the bound series of
 * `Metrics.boundHistogram` (a bucket search and three additions), the same observations, rounds
 * alternating. CPU-bound and in one process: the ratio holds on a loaded host, the ns less so.
 *
 *   npx tsx bench/metrics-observe.ts            (a few seconds)
 */
import { Effect } from "effect"
import * as os from "node:os"
import * as Prom from "prom-client"
import { Metrics } from "../src/platform/Metrics.ts"
import { report, spread } from "./support/results.ts"

const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const labelNames = ["method", "route", "status"] as const
const n = Number(process.env.OBSERVATIONS ?? 1_000_000)
const rounds = Number(process.env.ROUNDS ?? 7)

const metrics = Effect.runSync(Metrics.make)
const bound = metrics.boundHistogram({ name: "das_bench_bound_seconds", help: "bench", labelNames, buckets }).bind({ method: "GET", route: "/accounts", status: "200" })
const stock = new Prom.Histogram({ name: "das_bench_stock_seconds", help: "bench", labelNames, buckets, registers: [] })
  .labels("GET", "/accounts", "200")
const values = Float64Array.from({ length: 1024 }, (_, i) => (i % 97) / 1000)

const time = (observe: (v: number) => void) => {
  const t0 = process.cpuUsage()
  for (let i = 0; i < n; i++) observe(values[i & 1023]!)
  const t = process.cpuUsage(t0)
  return ((t.user + t.system) * 1000) / n
}
time(bound.observe)
time(stock.observe)
const ns = { bound: [] as Array<number>, stock: [] as Array<number> }
for (let r = 0; r < rounds; r++) {
  if (r % 2 === 0) {
    ns.stock.push(time(stock.observe))
    ns.bound.push(time(bound.observe))
  } else {
    ns.bound.push(time(bound.observe))
    ns.stock.push(time(stock.observe))
  }
}
const s = spread(ns.stock)
const b = spread(ns.bound)
console.log(`observe, CPU ns per call over ${n} calls × ${rounds} rounds (load ${os.loadavg()[0]!.toFixed(1)}): ` +
  `prom-client labels(...).observe ${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)}), bound ${b.median.toFixed(0)} (${b.min.toFixed(0)}–${b.max.toFixed(0)})`)
report({
  path: "request histogram observe, bound over prom-client's labels(...).observe (CPU per call)",
  service: b.median / s.median,
  baseline: 1,
  unit: "ratio",
  goal: "(reference)",
  met: true,
  spread: spread(ns.bound.map((x, i) => x / ns.stock[i]!))
})
