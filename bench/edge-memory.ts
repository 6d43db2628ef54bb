/**
 * Memory of the service at its edge: resident set size (RSS) of the service process
 * while clients send large bodies and while an upstream answers 100 MB.
 *
 *   npx tsx bench/edge-memory.ts           (about a minute; loopback only)
 *
 * The service (`src/main.ts`) runs as its own process over a private embedded
 * PostgreSQL and its local chain; a loopback marketplace stand-in in this process
 * streams a 100 MB JSON answer. Phases (each: peak RSS sampled every 10 ms):
 *   1. idle, after warm-up;
 *   2. 16 concurrent 1 MB bodies (just under the 1 MB limit: read and decoded), 10 rounds;
 *   3. 16 concurrent 2 MB bodies (over the limit: 413 while streaming), 10 rounds;
 *   4. 4 concurrent 50 MB bodies (refused from Content-Length, never read);
 *   5. 4 concurrent `GET /marketplace/agents` while the upstream answers 100 MB (502 at the cap).
 * The bound the README documents: every phase stays under idle + 150 MB.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../src/client/signIn.ts"
import { freePort, startPostgres, startProcess } from "./support/processes.ts"

const MB = 1024 * 1024

/** The resident set (bytes) of the largest process whose command line runs `src/main.ts`: the service. */
const serviceRss = (): number => {
  let best = 0
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
      if (!cmd.includes("src/main.ts")) continue
      const rss = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
      if (rss) best = Math.max(best, Number(rss[1]) * 1024)
    } catch {
      // gone meanwhile
    }
  }
  return best
}

const peakDuring = async <A>(work: () => Promise<A>): Promise<{ readonly peak: number; readonly result: A }> => {
  let peak = serviceRss()
  const timer = setInterval(() => (peak = Math.max(peak, serviceRss())), 10)
  try {
    const result = await work()
    peak = Math.max(peak, serviceRss())
    return { peak, result }
  } finally {
    clearInterval(timer)
  }
}

/** A marketplace stand-in: every request is answered with `size` bytes of a JSON list, streamed. */
const hugeUpstream = (size: number) =>
  new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      const chunk = Buffer.from(JSON.stringify({ name: "x".repeat(1000) }) + ",")
      let sent = 0
      res.write('{"data":[')
      const pump = () => {
        while (sent < size) {
          sent += chunk.length
          if (!res.write(chunk)) return void res.once("drain", pump)
        }
        res.end("{}]}")
      }
      res.on("error", () => {})
      res.on("close", () => (sent = size))
      pump()
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())))
      }))
  })

const post = (url: string, token: string, body: Buffer, declaredOnly = false) =>
  new Promise<number>((resolve) => {
    const req = http.request(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": body.length },
      agent: false
    }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", () => resolve(0))
    if (declaredOnly) req.write(body.subarray(0, 64 * 1024))
    else req.end(body)
  })

const get = (url: string, token: string) =>
  fetch(url, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => (await r.arrayBuffer(), r.status), () => 0)

const jsonBody = (size: number) => {
  const prefix = '{"label":"'
  const suffix = '"}'
  return Buffer.from(prefix + "x".repeat(size - prefix.length - suffix.length) + suffix)
}

const counts = (statuses: ReadonlyArray<number>) => {
  const out: Record<number, number> = {}
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1
  return JSON.stringify(out)
}

const pg = await startPostgres()
const upstream = await hugeUpstream(100 * MB)
const port = await freePort()
const dataDir = fs.mkdtempSync("/tmp/das-bench-edge-")
const service = await startProcess(
  "src/main.ts",
  {
    DATABASE_URL: pg.url,
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_FORMAT: "json",
    MARKETPLACE_API_URL: upstream.url,
    RATE_LIMIT_BUILDS_PER_MINUTE: "0",
    ANCHOR_INTERVAL: "0 seconds"
  },
  `http://127.0.0.1:${port}/health/ready`
)
const base = `http://127.0.0.1:${port}`
const rows: Array<[string, string, string]> = []
try {
  const session = await Effect.runPromise(signIn(base, privateKeyToAccount(generatePrivateKey())))
  const token = session.token
  for (let i = 0; i < 200; i++) await get(`${base}/accounts`, token)
  await new Promise((r) => setTimeout(r, 1000))
  const idle = serviceRss()
  rows.push(["idle (after warm-up)", `${(idle / MB).toFixed(0)} MB`, ""])

  const under = jsonBody(MB - 1024)
  const r1 = await peakDuring(async () => {
    const statuses: Array<number> = []
    for (let round = 0; round < 10; round++) {
      statuses.push(...await Promise.all(Array.from({ length: 16 }, () => post(`${base}/accounts`, token, under))))
    }
    return statuses
  })
  rows.push(["16 x 1 MB bodies x 10 rounds", `${(r1.peak / MB).toFixed(0)} MB`, counts(r1.result)])

  const over = jsonBody(2 * MB)
  const r2 = await peakDuring(async () => {
    const statuses: Array<number> = []
    for (let round = 0; round < 10; round++) {
      statuses.push(...await Promise.all(Array.from({ length: 16 }, () => post(`${base}/accounts`, token, over))))
    }
    return statuses
  })
  rows.push(["16 x 2 MB bodies x 10 rounds", `${(r2.peak / MB).toFixed(0)} MB`, counts(r2.result)])

  const huge = Buffer.alloc(50 * MB, "x")
  const r3 = await peakDuring(() =>
    Promise.all(Array.from({ length: 4 }, () => post(`${base}/accounts`, token, huge, true)))
  )
  rows.push(["4 x 50 MB bodies (declared)", `${(r3.peak / MB).toFixed(0)} MB`, counts(r3.result)])

  const r4 = await peakDuring(async () => {
    const statuses: Array<number> = []
    for (let round = 0; round < 3; round++) {
      statuses.push(...await Promise.all(Array.from({ length: 4 }, (_, i) => get(`${base}/marketplace/agents?limit=${10 + i + round * 4}`, token))))
    }
    return statuses
  })
  rows.push(["4 x 100 MB upstream answers x 3 rounds", `${(r4.peak / MB).toFixed(0)} MB`, counts(r4.result)])

  console.log("\nService RSS (peak while the phase ran):\n")
  console.log("| phase | peak RSS | statuses |")
  console.log("| --- | --- | --- |")
  for (const [phase, rss, statuses] of rows) console.log(`| ${phase} | ${rss} | ${statuses} |`)
  const worst = Math.max(r1.peak, r2.peak, r3.peak, r4.peak)
  console.log(`\nworst phase: idle + ${((worst - idle) / MB).toFixed(0)} MB (documented bound: idle + 150 MB)`)
} finally {
  await service.stop()
  await upstream.close()
  await pg.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
}
