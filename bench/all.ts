/**
 * `npm run bench`: runs every benchmark one after another (never in parallel: they would
 * measure each other) and prints ONE table of their goals, gathered from the
 * `BENCH_RESULT {...}` lines each prints (bench/support/results.ts). Each benchmark
 * keeps under 2 minutes; a benchmark that fails or overruns shows as a failed row.
 *
 *   npm run bench                 all of them
 *   npm run bench -- audit relay  some of them
 */
import { spawn } from "node:child_process"
import * as path from "node:path"
import { root } from "./support/processes.ts"
import type { Result } from "./support/results.ts"

const all = ["http-read", "launchpad", "floor", "relay", "receipts", "permissions-granted", "notify", "delegation-action", "x402-paths", "approvals", "audit", "marketplace-stream", "follower", "chains", "console", "x402-channel", "scale"] as const
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [...all]
const limitMs = 150_000
/**
 * Longer runs: `scale` seeds and measures two sizes here (10k and 100k, ~10 minutes on 2 cores);
 * its 1M size is `npx tsx bench/scale.ts` alone (or SCALE_SIZES=10000,100000,1000000 here).
 */
const limits: Record<string, number> = { scale: 1_200_000, "x402-paths": 300_000, relay: 420_000 }
const extraEnv: Record<string, Record<string, string>> = {
  // Payments settle on chain one at a time: its start-up alone takes a minute on a loaded host.
  "x402-paths": { BENCH_MAX_SECONDS: "280" },
  // Each round signs in and builds four times before its four sends; it stops at its budget.
  relay: { BENCH_MAX_SECONDS: "330" },
  scale: { SCALE_SIZES: process.env.SCALE_SIZES ?? "10000,100000", SCALE_SAMPLES: process.env.SCALE_SAMPLES ?? "20" }
}

const run = (name: string) =>
  new Promise<{ results: Array<Result>; ok: boolean; seconds: number }>((resolve) => {
    const started = Date.now()
    const env = { ...process.env, BENCH_MAX_SECONDS: "115", ...extraEnv[name] }
    const child = spawn(path.join(root, "node_modules/.bin/tsx"), [`bench/${name}.ts`], { cwd: root, env, stdio: ["ignore", "pipe", "inherit"] })
    const results: Array<Result> = []
    let buffered = ""
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8")
      const lines = buffered.split("\n")
      buffered = lines.pop() ?? ""
      for (const line of lines) {
        if (line.startsWith("BENCH_RESULT ")) results.push(JSON.parse(line.slice("BENCH_RESULT ".length)) as Result)
        else if (!line.startsWith("{")) console.log(`  [${name}] ${line}`)
      }
    })
    const timer = setTimeout(() => child.kill("SIGKILL"), limits[name] ?? limitMs)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ results, ok: code === 0, seconds: (Date.now() - started) / 1000 })
    })
  })

const fmt = (n: number, unit: Result["unit"]) =>
  unit === "ratio" ? "" : `${n.toFixed(unit === "req/s" ? 0 : 1)} ${unit}`

const rows: Array<ReadonlyArray<string>> = [["benchmark", "path", "service", "baseline", "ratio / diff (spread)", "goal", "met?"]]
for (const name of chosen) {
  console.log(`\n== bench/${name}.ts`)
  const { ok, results, seconds } = await run(name)
  console.log(`== bench/${name}.ts: ${ok ? "done" : "FAILED"} in ${seconds.toFixed(0)} s`)
  if (!ok && results.length === 0) rows.push([name, "(failed or over its time limit)", "", "", "", "", "no"])
  for (const r of results) {
    const range = r.spread !== undefined ? ` (${r.spread.min.toFixed(2)}–${r.spread.max.toFixed(2)})` : ""
    const relative = r.unit === "ratio"
      ? `${r.service.toFixed(2)}×${range}`
      : r.unit === "req/s"
      // Over rounds: the median of the rounds' ratios, which the goal is judged on (the two
      // sides' median rates need not come from the same round).
      ? `${(r.spread?.median ?? r.service / r.baseline).toFixed(2)}×${range}`
      : r.unit === "ms" && r.baseline > 0
      ? `+${(r.service - r.baseline).toFixed(1)} ms${range}`
      : `${fmt(r.service, r.unit)}${range}`
    rows.push([name, r.path, fmt(r.service, r.unit), r.baseline > 0 && r.unit !== "ratio" ? fmt(r.baseline, r.unit) : "", relative, r.goal, r.goal === "(reference)" ? "—" : r.met ? "yes" : "no"])
  }
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
console.log("")
for (const [i, r] of rows.entries()) {
  console.log(`| ${r.map((c, j) => c.padEnd(widths[j]!)).join(" | ")} |`)
  if (i === 0) console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`)
}
