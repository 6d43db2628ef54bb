/**
 * A loopback stand-in in front of the run's Alto that a test can switch: `up` forwards
 * every JSON-RPC request, `down` drops every connection (the bundler is gone), and
 * `hang-send` forwards everything but never answers `eth_sendUserOperation` (the
 * service dies while forwarding), `receipt-null-then-down` answers the first
 * `eth_getUserOperationReceipt` "unknown" (null) and drops every later one (a flaky bundler),
 * `receipt-null` answers every receipt "unknown" (operations mined, the service not told yet).
 */
import { Effect } from "effect"
import * as http from "node:http"

export type ProxyMode = "up" | "down" | "hang-send" | "receipt-null-then-down" | "receipt-null"

export interface BundlerProxy {
  readonly url: string
  setMode(mode: ProxyMode): void
  /** How many `eth_sendUserOperation` requests reached the real bundler. */
  readonly forwardedSends: () => number
  /** Drops the connections of the sends held in `hang-send` mode. */
  releaseHanging(): void
}

export const bundlerProxy = (target: string, initial: ProxyMode = "up") =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<BundlerProxy & { close: () => void }>((resolve) => {
        let mode: ProxyMode = initial
        let sends = 0
        let receiptNulled = false
        const hanging = new Set<http.ServerResponse>()
        const server = http.createServer((req, res) => {
          if (mode === "down") {
            req.socket.destroy()
            return
          }
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", async () => {
            const body = Buffer.concat(chunks).toString()
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
            const isSend = body.includes("eth_sendUserOperation")
            if (isSend && mode === "hang-send") {
              hanging.add(res)
              return
            }
            if (isSend) sends++
            try {
              const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body })
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
