/**
 * Node's own floor for an open SSE stream: heap per response of a bare `node:http` server
 * holding N open responses (the stream's head and first bytes written, one small object and
 * a `close` listener each), N bare keep-alive sockets from a child process. Compare with the
 * "heap per connection" of `bench/marketplace-stream.ts`. Then node's floor for the fan-out:
 * one event (pre-framed once as an HTTP/1.1 chunk, as the service's hub does) written to
 * every socket in one synchronous loop, 4 times one second apart (the first a warm-up): the
 * loop's wall time and the process's CPU time (user, system) per event. The clients read
 * everything they get. Compare with "upstream answer → written to every socket" of
 * `bench/marketplace-stream.ts` (10,000 there). About 10 s.
 *
 *   npx tsx bench/stream-node-floor.ts [connections=2000]
 */
import { fork } from "node:child_process"
import { createServer, type ServerResponse } from "node:http"
import * as net from "node:net"
import type { AddressInfo } from "node:net"
import { runInNewContext } from "node:vm"
import * as v8 from "node:v8"

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))

const clients = (port: number, n: number) => {
  let i = 0
  const sockets: Array<net.Socket> = []
  const batch = () => {
    for (let k = 0; k < 250 && i < n; k++, i++) {
      const s = net.connect(port, "127.0.0.1")
      s.on("error", () => {})
      s.on("data", () => {})
      s.write("GET /marketplace/agents/stream HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
      sockets.push(s)
    }
    if (i < n) setTimeout(batch, 20)
  }
  batch()
}

const main = async () => {
  v8.setFlagsFromString("--expose_gc")
  const gc = runInNewContext("gc") as () => void
  const heap = () => {
    gc()
    gc()
    return process.memoryUsage().heapUsed
  }
  const n = Number(process.argv[2] ?? 2000)
  const held = new Set<{ readonly res: ServerResponse }>()
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform" })
    res.write(": connected\nretry: 5000\n\n")
    const entry = { res }
    res.on("close", () => held.delete(entry))
    held.add(entry)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const port = (server.address() as AddressInfo).port
  const base = heap()
  const child = fork(new URL(import.meta.url).pathname, ["clients", String(port), String(n)], { execArgv: process.execArgv })
  while (held.size < n) await wait(50)
  await wait(500)
  const used = heap() - base
  console.log(`bare node:http, ${n} open SSE responses: ${(used / 1024 / n).toFixed(2)} KB heap per response`)
  // The service's event: one agent's stat, as the hub frames it (`statFrame`).
  const stat = { walletAddress: `0x${"ab".repeat(20)}`, successRate: 0.95, totalJobs: 42, rating: 4.5, pricePerJobUsd: 1.5, totalVolumeUsd: 123456, asOf: new Date().toISOString() }
  const data = Buffer.from(`data: ${JSON.stringify(stat)}\n\n`)
  const chunk = Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")])
  const sockets = [...held].map((e) => e.res.socket!)
  const runs: Array<string> = []
  for (let round = 0; round < 4; round++) {
    await wait(1000)
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (const socket of sockets) socket.write(chunk)
    const ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    if (round > 0) runs.push(`${ms.toFixed(1)} ms (user ${(cpu.user / 1000).toFixed(1)}, system ${(cpu.system / 1000).toFixed(1)})`)
  }
  console.log(`bare node:http, one event written to ${n} sockets in one loop: ${runs.join("; ")}`)
  child.kill()
  process.exit(0)
}

if (process.argv[2] === "clients") clients(Number(process.argv[3]), Number(process.argv[4]))
else void main()
