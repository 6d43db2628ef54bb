/**
 * The chain reader's transport (`pooledFetch`, src/chain/RpcFetch.ts) against a real JSON-RPC
 * server on loopback, through viem as the service uses it, side by side with viem over the global
 * `fetch`: the same answers and the same failures (status, bad body, timeout, refused
 * connection, an answer over viem's size cap), the endpoint's path and query kept, and kept-alive connections for many calls.
 */
import http from "node:http"
import type { AddressInfo } from "node:net"
import { createPublicClient, http as viemHttp } from "viem"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { pooledFetch } from "../../src/chain/RpcFetch.ts"

type Mode = "ok" | "status500" | "notJson" | "silent" | "huge"

let server: http.Server
let base = ""
let mode: Mode = "ok"
const seen: Array<{ readonly url: string; readonly method: string }> = []
let connections = 0

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString("utf8")))
    req.on("end", () => {
      const call = JSON.parse(body) as { id: number; method: string }
      seen.push({ url: req.url ?? "", method: call.method })
      if (mode === "silent") return // never answers: the caller's timeout ends it
      if (mode === "status500") {
        res.writeHead(500, { "content-type": "application/json" })
        return res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, error: { code: -32603, message: "node is down" } }))
      }
      if (mode === "huge") {
        // 11 MiB, over viem's own cap (10 MiB), in 1 MiB writes.
        res.writeHead(200, { "content-type": "application/json" })
        const chunk = Buffer.alloc(1024 * 1024, 0x20)
        for (let i = 0; i < 11; i++) res.write(chunk)
        return res.end()
      }
      if (mode === "notJson") {
        res.writeHead(502, { "content-type": "text/html" })
        return res.end("<html>bad gateway</html>")
      }
      res.writeHead(200, { "content-type": "application/json" })
      const result = call.method === "eth_chainId" ? "0x7a69" : call.method === "eth_getCode" ? "0x6001" : "0x10"
      res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }))
    })
  })
  server.on("connection", () => connections++)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const clients = (url: string, timeout = 10_000) => ({
  fetch: createPublicClient({ transport: viemHttp(url, { timeout, retryCount: 0 }) }),
  pooled: createPublicClient({ transport: viemHttp(url, { timeout, retryCount: 0, fetchFn: pooledFetch(url) }) })
})
/** The failure's class and short message, for comparing the two transports. */
const failure = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (e: { name: string; shortMessage?: string; status?: number }) => `${e.name} ${e.status ?? ""} ${e.shortMessage ?? ""}`
  )

describe("the chain reader's pooled transport", () => {
  it("answers as fetch does, to the endpoint's own path and query", async () => {
    mode = "ok"
    seen.length = 0
    const c = clients(`${base}/v2/some-key?tenant=a`)
    for (const client of [c.fetch, c.pooled]) {
      assert.strictEqual(await client.getChainId(), 31337)
      assert.strictEqual(await client.getCode({ address: "0x0000000071727De22E5E9d8BAf0edAc6f37da032" }), "0x6001")
      assert.strictEqual(await client.getBlockNumber({ cacheTime: 0 }), 16n)
    }
    assert.deepStrictEqual(seen.map((s) => s.url), Array(6).fill("/v2/some-key?tenant=a"))
    assert.deepStrictEqual(seen.map((s) => s.method).slice(3), ["eth_chainId", "eth_getCode", "eth_blockNumber"])
  })

  it("fails as fetch does: an error status, a body that is not JSON, a timeout, a refused connection", async () => {
    const c = clients(`${base}/rpc`, 300)
    for (const m of ["status500", "notJson", "silent"] as const) {
      mode = m
      const viaFetch = await failure(c.fetch.getChainId())
      const viaPool = await failure(c.pooled.getChainId())
      assert.notStrictEqual(viaPool, "resolved", m)
      assert.strictEqual(viaPool, viaFetch, m)
    }
    mode = "ok"
    // A port nobody listens on.
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const refused = clients(`http://127.0.0.1:${port}/`)
    const viaFetch = await failure(refused.fetch.getChainId())
    const viaPool = await failure(refused.pooled.getChainId())
    assert.match(viaPool, /^HttpRequestError/)
    assert.strictEqual(viaPool, viaFetch)
  })

  it("refuses an answer over viem's cap (10 MiB), as fetch does", async () => {
    mode = "huge"
    const c = clients(`${base}/rpc`)
    const viaFetch = await failure(c.fetch.getChainId())
    const viaPool = await failure(c.pooled.getChainId())
    assert.match(viaPool, /^ResponseBodyTooLargeError/)
    assert.strictEqual(viaPool, viaFetch)
    mode = "ok"
  })

  it("keeps its connections: fifty-one calls in sequence over at most two", async () => {
    mode = "ok"
    const before = connections
    const client = createPublicClient({ transport: viemHttp(`${base}/`, { fetchFn: pooledFetch(`${base}/`) }) })
    await client.getChainId()
    for (let i = 0; i < 50; i++) assert.strictEqual(await client.getBlockNumber({ cacheTime: 0 }), 16n)
    assert.isAtMost(connections - before, 2)
  })
})
