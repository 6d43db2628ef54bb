/**
 * A loopback stand-in in front of the run's Alto that a test can switch: `up` forwards
 * every JSON-RPC request, `down` drops every connection (the bundler is gone), and
 * `hang-send` forwards everything but never answers `eth_sendUserOperation` (the
 * service dies while forwarding), `receipt-null-then-down` answers the first
 * `eth_getUserOperationReceipt` "unknown" (null) and drops every later one (a flaky bundler),
 * `receipt-null` answers every receipt "unknown" (operations mined, the service not told yet),
 * `drop-answers` is a faulty bundler: it loses one answer in four of `eth_sendUserOperation` and
 * `eth_getUserOperationReceipt` (the bundler acted; the service never hears it), refuses every
 * re-send of an operation it already took with "AA25 invalid account nonce" (without looking),
 * and answers every other receipt request "unknown" (null). `lose-send-answer` forwards every
 * `eth_sendUserOperation` and drops the connection instead of answering (the bundler took the
 * operation; the service never hears it). `refuse-send` answers every `eth_sendUserOperation` with a
 * refusal that is not stale-prone (`-32507 AA24 signature error`) without forwarding it: a bundler
 * that wrongly refuses an operation another bundler then includes.
 */
import { Effect } from "effect"
import * as http from "node:http"

export type ProxyMode =
  | "up"
  | "down"
  | "hang-send"
  | "receipt-null-then-down"
  | "receipt-null"
  | "drop-answers"
  | "lose-send-answer"
  | "refuse-send"

export interface BundlerProxy {
  readonly url: string
  setMode(mode: ProxyMode): void
  /** How many `eth_sendUserOperation` requests reached the real bundler. */
  readonly forwardedSends: () => number
  /** Drops the connections of the sends held in `hang-send` mode. */
  releaseHanging(): void
  /**
   * The next `eth_sendUserOperation` is answered at once with `userOpHash` (as the bundler
   * would), and reaches the bundler only when `until` resolves: a bundler slow to bundle.
   */
  deferNextSend(userOpHash: string, until: Promise<unknown>): void
}

export const bundlerProxy = (
  target: string,
  initial: ProxyMode = "up",
  /** Awaited when an `eth_sendUserOperation` arrives, before it is forwarded: what the bundler is shown at that moment. */
  onSend?: (body: string) => Promise<void>
) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<BundlerProxy & { close: () => void }>((resolve) => {
        let mode: ProxyMode = initial
        let sends = 0
        let receiptNulled = false
        let answered = 0
        let receipts = 0
        const taken = new Set<string>()
        const hanging = new Set<http.ServerResponse>()
        let deferred: { readonly hash: string; readonly until: Promise<unknown> } | undefined
        const server = http.createServer((req, res) => {
          if (mode === "down") {
            req.socket.destroy()
            return
          }
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", async () => {
            const body = Buffer.concat(chunks).toString()
            if (mode === "refuse-send" && body.includes("eth_sendUserOperation")) {
              res.writeHead(200, { "content-type": "application/json" })
              res.end(JSON.stringify({
                jsonrpc: "2.0",
                id: (JSON.parse(body) as { id: unknown }).id,
                error: { code: -32507, message: "AA24 signature error" }
              }))
              return
            }
            if (mode === "receipt-null" && body.includes("eth_getUserOperationReceipt")) {
              res.writeHead(200, { "content-type": "application/json" })
              res.end(JSON.stringify({ jsonrpc: "2.0", id: (JSON.parse(body) as { id: unknown }).id, result: null }))
              return
            }
            if (mode === "receipt-null-then-down" && body.includes("eth_getUserOperationReceipt")) {
              if (receiptNulled) {
                req.socket.destroy()
                return
              }
              receiptNulled = true
              res.writeHead(200, { "content-type": "application/json" })
              res.end(JSON.stringify({ jsonrpc: "2.0", id: (JSON.parse(body) as { id: unknown }).id, result: null }))
              return
            }
            if (mode === "drop-answers") {
              const rpc = JSON.parse(body) as { id: unknown; method: string; params?: ReadonlyArray<{ sender?: string; nonce?: string }> }
              const reply = (payload: object) => {
                res.writeHead(200, { "content-type": "application/json" })
                res.end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, ...payload }))
              }
              if (rpc.method === "eth_sendUserOperation") {
                const op = `${rpc.params?.[0]?.sender?.toLowerCase()}:${rpc.params?.[0]?.nonce}`
                if (taken.has(op)) return reply({ error: { code: -32500, message: "AA25 invalid account nonce" } })
                taken.add(op)
              }
              if (rpc.method === "eth_getUserOperationReceipt" && ++receipts % 2 === 0) return reply({ result: null })
            }
            const isSend = body.includes("eth_sendUserOperation")
            if (isSend && deferred !== undefined) {
              const { hash, until } = deferred
              deferred = undefined
              sends++
              res.writeHead(200, { "content-type": "application/json" })
              res.end(JSON.stringify({ jsonrpc: "2.0", id: (JSON.parse(body) as { id: unknown }).id, result: hash }))
              void until.then(() => fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body })).catch(() => undefined)
              return
            }
            if (isSend && mode === "hang-send") {
              hanging.add(res)
              return
            }
            if (isSend) sends++
            if (isSend && onSend !== undefined) await onSend(body)
            try {
              const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body })
              const lost = mode === "lose-send-answer" && isSend
              if (lost || mode === "drop-answers" && /eth_sendUserOperation|eth_getUserOperationReceipt/.test(body) && ++answered % 4 === 0) {
                req.socket.destroy()
                return
              }
              res.writeHead(answer.status, { "content-type": "application/json" })
              res.end(await answer.text())
            } catch {
              req.socket.destroy()
            }
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as { port: number }
          resolve({
            url: `http://127.0.0.1:${port}`,
            setMode: (m) => {
              mode = m
              receiptNulled = false
            },
            forwardedSends: () => sends,
            deferNextSend: (hash, until) => void (deferred = { hash, until }),
            releaseHanging: () => {
              for (const res of hanging) res.destroy()
              hanging.clear()
            },
            close: () => {
              for (const res of hanging) res.destroy()
              server.closeAllConnections()
              server.close()
            }
          })
        })
      })
    ),
    (proxy) => Effect.sync(() => proxy.close())
  )
