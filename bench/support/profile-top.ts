/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): the top functions by self time,
 * and self time per package / file group. Used to write docs/performance.md.
 *
 *   npx tsx bench/support/profile-top.ts <file.cpuprofile> [top=25]
 *
 * HIST=1 prints the busy (not idle) milliseconds in each second of the profile, to find a
 * benchmark's measured loop; FROM=<s> TO=<s> then count only the samples in that window, and
 * PER=<n> divides every figure by n (e.g. the actions in the window) and prints ms instead of %.
 */
import * as fs from "node:fs"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const [file, topArg] = process.argv.slice(2)
if (file === undefined) throw new Error("usage: profile-top.ts <file.cpuprofile> [top]")
const top = Number(topArg ?? 25)
const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const isIdle = (id: number) => byId.get(id)!.callFrame.functionName === "(idle)"
// Each sample's time from the profile's start (µs).
let elapsed = 0
const at = profile.timeDeltas.map((d) => (elapsed += d))
if (process.env.HIST === "1") {
  const busy = new Map<number, number>()
  profile.samples.forEach((id, i) => {
    if (!isIdle(id)) busy.set(Math.floor(at[i]! / 1e6), (busy.get(Math.floor(at[i]! / 1e6)) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  console.log(`busy ms per second: ${[...busy].map(([sec, us]) => `${sec}s ${(us / 1e3).toFixed(0)}`).join(", ")}`)
}
const from = Number(process.env.FROM ?? 0) * 1e6
const to = process.env.TO === undefined ? Infinity : Number(process.env.TO) * 1e6
const per = process.env.PER === undefined ? undefined : Number(process.env.PER)
const selfUs = new Map<number, number>()
profile.samples.forEach((id, i) => {
  if (at[i]! < from || at[i]! > to) return
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
})
const total = [...selfUs.values()].reduce((a, b) => a + b, 0)

const where = (url: string) => {
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)
  if (m) return m[1]!
  if (url.startsWith("node:")) return url
  if (url === "") return "(native/gc/idle)"
  return url.replace(/^.*\/(src|bench)\//, "$1/")
}
const fnSelf = new Map<string, number>()
const groupSelf = new Map<string, number>()
for (const [id, us] of selfUs) {
  const n = byId.get(id)!
  const f = n.callFrame
  const key = `${f.functionName || "(anonymous)"}  ${where(f.url)}:${f.lineNumber + 1}`
  fnSelf.set(key, (fnSelf.get(key) ?? 0) + us)
  const g = where(f.url)
  groupSelf.set(g, (groupSelf.get(g) ?? 0) + us)
}
// Inclusive time: every sample counted once for each distinct function on its stack.
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const keyOf = (n: Node) => `${n.callFrame.functionName || "(anonymous)"}  ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
const fnTotal = new Map<string, number>()
for (const [id, us] of selfUs) {
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) seen.add(keyOf(byId.get(at)!))
  for (const k of seen) fnTotal.set(k, (fnTotal.get(k) ?? 0) + us)
}
const pct = (us: number) =>
  per === undefined ? `${((100 * us) / total).toFixed(1).padStart(5)} %` : `${(us / 1e3 / per).toFixed(2).padStart(6)} ms`
const idle = [...fnSelf].filter(([k]) => k.startsWith("(idle)")).reduce((a, [, v]) => a + v, 0)
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled, idle ${pct(idle)}, busy ${pct(total - idle)}${per === undefined ? "" : ` (per ${per})`}`)
console.log(`\nself time by package/file:`)
for (const [k, v] of [...groupSelf].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${pct(v)}  ${k}`)
console.log(`\ntop ${top} functions by self time:`)
for (const [k, v] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`)
const pattern = process.env.MATCH
if (pattern !== undefined) {
  console.log(`\ninclusive time of functions matching /${pattern}/:`)
  for (const [k, v] of [...fnTotal].filter(([k]) => new RegExp(pattern).test(k)).sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${pct(v)}  ${k}`)
  }
}
