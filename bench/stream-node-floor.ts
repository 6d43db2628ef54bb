/**
 * Node's own floor for an open SSE stream: heap per response of a bare `node:http` server
 * holding N open responses (the stream's head and first bytes written, one small object and
 * a `close` listener each), N bare keep-alive sockets from a child process. Compare with the
 * "heap per connection" of `bench/marketplace-stream.ts`. About 5 s.
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
  child.kill()
  process.exit(0)
}

if (process.argv[2] === "clients") clients(Number(process.argv[3]), Number(process.argv[4]))
else void main()
