/**
 * One fee-data read answers the builds of `feeDataMaxAge` (src/chain/Chain.ts, issue 46 item 3),
 * against a real JSON-RPC node on loopback that counts its calls and whose base fee the test
 * moves: reads within the age share one call of the node (at once too), a read after it asks the
 * node again and sees the new fee, a failed read is never kept, and 0 reads every time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { makeChain } from "../../src/chain/Chain.ts"
import type { NetworkDescription } from "../../src/chain/Network.ts"

/** A node that answers the two calls of viem's fee estimate, counts the blocks read, and fails while `failing`. */
const feeNode = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; blocksRead: () => number; setBaseFee(wei: bigint): void; setFailing(on: boolean): void; close(): void }>((resolve) => {
      let baseFee = 1_000_000_000n
      let blocks = 0
      let failing = false
      const server = http.createServer((req, res) => {
        let body = ""
        req.on("data", (c: Buffer) => (body += c.toString("utf8")))
        req.on("end", () => {
          const call = JSON.parse(body) as { id: number; method: string }
          const answer = (result: unknown) => res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }))
          res.writeHead(200, { "content-type": "application/json" })
          if (failing) return res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, error: { code: -32603, message: "node is down" } }))
          if (call.method === "eth_getBlockByNumber") {
            blocks++
            return answer({
              number: "0x10",
              hash: `0x${"11".repeat(32)}`,
              parentHash: `0x${"22".repeat(32)}`,
              timestamp: "0x1",
              baseFeePerGas: `0x${baseFee.toString(16)}`,
              gasLimit: "0x1c9c380",
              gasUsed: "0x0",
              transactions: []
            })
          }
          if (call.method === "eth_maxPriorityFeePerGas") return answer("0x3b9aca00")
          return res.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, error: { code: -32601, message: `no ${call.method}` } }))
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          blocksRead: () => blocks,
          setBaseFee: (wei) => void (baseFee = wei),
          setFailing: (on) => void (failing = on),
          close: () => void server.close()
        }))
    })
  ),
  (node) => Effect.sync(() => node.close())
)

const chainAt = (url: string, maxAge: Duration.Duration) =>
  makeChain({ chainId: 31337, rpcUrl: url, entryPoint: `0x${"00".repeat(20)}` } as unknown as NetworkDescription, {
    timeout: Duration.seconds(5),
    feeDataMaxAge: maxAge
  })

describe("fee data, one read per max age", () => {
  // Live clock: the age is the wall clock's (Date.now), as in the service.
  it.live("reads within the age share one call; after it the node is asked again and its new fee is answered", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* feeNode
      const chain = chainAt(node.url, Duration.minutes(1))
      // Three builds at once, then one more: one read of the node.
      const [a, b, c] = yield* Effect.all([chain.feeData, chain.feeData, chain.feeData], { concurrency: "unbounded" })
      const d = yield* chain.feeData
      assert.strictEqual(node.blocksRead(), 1)
      for (const x of [b, c, d]) assert.deepStrictEqual(x, a)
      // viem's estimate: 1.2 × the base fee + the priority fee.
      assert.strictEqual(a.maxFeePerGas, 1_200_000_000n + 1_000_000_000n)
      node.setBaseFee(5_000_000_000n)
      assert.deepStrictEqual(yield* chain.feeData, a) // within the age: the read already made
      assert.strictEqual(node.blocksRead(), 1)
      // A reader whose age is short: past it (the wait is longer than the age), the node is read again.
      const short = chainAt(node.url, Duration.millis(50))
      yield* short.feeData
      yield* Effect.sleep(Duration.millis(100))
      node.setBaseFee(10_000_000_000n)
      const after = yield* short.feeData
      assert.strictEqual(node.blocksRead(), 3)
      assert.strictEqual(after.maxFeePerGas, 12_000_000_000n + 1_000_000_000n)
    })))

  it.effect("a failed read is not kept: the next build asks the node again", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* feeNode
      const chain = chainAt(node.url, Duration.minutes(1))
      node.setFailing(true)
      const failed = yield* Effect.exit(chain.feeData)
      assert.isTrue(Exit.isFailure(failed))
      assert.include(JSON.stringify(failed), "ChainUnavailable")
      node.setFailing(false)
      const fees = yield* chain.feeData
      assert.strictEqual(fees.maxPriorityFeePerGas, 1_000_000_000n)
      assert.strictEqual(node.blocksRead(), 1)
    })))

  it.effect("a max age of 0 reads the node for every build", () =>
    Effect.scoped(Effect.gen(function*() {
      const node = yield* feeNode
      const chain = chainAt(node.url, Duration.zero)
      yield* chain.feeData
      yield* chain.feeData
      yield* Effect.all([chain.feeData, chain.feeData], { concurrency: "unbounded" })
      assert.strictEqual(node.blocksRead(), 4)
    })))
})
