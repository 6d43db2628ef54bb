/**
 * A keep-alive GET load generator in a worker thread (so it does not share the server's
 * event loop): `concurrency` clients loop for `seconds` after a 0.5 s warm-up.
 */
import { Effect } from "effect"
import { Worker } from "node:worker_threads"

/** The load loop; `prelude` defines `workerData` and `parentPort` (a worker's, or a child process's stand-ins). */
const loadScript = (prelude: string) => `
${prelude}
const http = require("node:http")
const { url, seconds, concurrency } = workerData
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })
const once = () => new Promise((resolve) => {
  http.get(url, { agent }, (res) => { res.resume(); res.on("end", () => resolve(res.statusCode)) })
    .on("error", () => resolve(0))
})
;(async () => {
  let ok = 0, failed = 0
  const warmEnd = Date.now() + 500
  while (Date.now() < warmEnd) await once()
  const started = Date.now(), end = started + seconds * 1000
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) { (await once()) === 200 ? ok++ : failed++ }
  }))
  const elapsed = (Date.now() - started) / 1000
  agent.destroy()
  parentPort.postMessage({ rps: ok / elapsed, ok, failed })
})()
`

export interface LoadResult {
  readonly rps: number
  readonly ok: number
  readonly failed: number
}

export const loadFor = (url: string, seconds: number, concurrency: number) =>
  Effect.promise(() =>
    new Promise<LoadResult>((resolve, reject) => {
      const w = new Worker(loadScript(`const { parentPort, workerData } = require("node:worker_threads")`), { eval: true, workerData: { url, seconds, concurrency } })
      w.once("message", (m: LoadResult) => {
        void w.terminate()
        resolve(m)
      })
      w.once("error", reject)
    })
  )

/**
 * The same load from a separate process, with the CPU time this process spent meanwhile
 * (`process.cpuUsage`, user + system): CPU µs per request is far steadier than requests/s
 * on a shared machine, since it does not depend on how much of the CPU the server got.
 */
export const loadWithCpu = (url: string, seconds: number, concurrency: number) =>
  Effect.promise(async () => {
    const { spawn } = await import("node:child_process")
    const script = loadScript(
      `const workerData = JSON.parse(process.argv[1]); const parentPort = { postMessage: (m) => process.stdout.write(JSON.stringify(m)) }`
    )
    const before = process.cpuUsage()
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ["-e", script, JSON.stringify({ url, seconds, concurrency })], { stdio: ["ignore", "pipe", "inherit"] })
      let data = ""
      child.stdout.on("data", (d) => (data += d))
      child.once("exit", () => resolve(data))
      child.once("error", reject)
    })
    const cpu = process.cpuUsage(before)
    const result = JSON.parse(out) as LoadResult
    const total = result.ok + result.failed
    return { ...result, cpuUsPerRequest: total === 0 ? 0 : (cpu.user + cpu.system) / total }
  })
