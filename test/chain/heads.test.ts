/**
 * New heads pushed (src/chain/Heads.ts): the run's anvil pushes each new block's number over
 * its WebSocket endpoint; a node without a WebSocket endpoint, one that refuses the
 * subscription, and a socket that goes away are each a `HeadsLost` (the caller polls).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber } from "effect"
import * as http from "node:http"
import { WebSocketServer } from "ws"
import { followHeads, type Head } from "../../src/chain/Heads.ts"
import { testNetwork } from "../support/TestChain.ts"

process.env.DO_NOT_TRACK = "1"

const rpc = (url: string, method: string, params: ReadonlyArray<unknown> = []) =>
  Effect.promise(async () => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })
    return ((await res.json()) as { result: unknown }).result
  })

/** A loopback WebSocket server answering `eth_subscribe` with `answer` (then, optionally, closing). */
const fakeNode = (answer: (id: number) => object, close = false) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; server: http.Server; wss: WebSocketServer }>((resolve) => {
        const server = http.createServer()
        const wss = new WebSocketServer({ server })
        wss.on("connection", (socket) => {
          socket.on("message", (data) => {
            const msg = JSON.parse(String(data)) as { id: number; method: string }
            if (msg.method !== "eth_subscribe") return
            socket.send(JSON.stringify({ jsonrpc: "2.0", ...answer(msg.id) }))
            if (close) setTimeout(() => socket.close(), 50)
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const port = (server.address() as { port: number }).port
          resolve({ url: `ws://127.0.0.1:${port}`, server, wss })
        })
      })
    ),
    ({ server, wss }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          for (const c of wss.clients) c.terminate()
          wss.close()
          server.close(() => resolve())
        })
      )
  )

describe("followHeads", () => {
  it.live("hears each new block the node makes, by number", () =>
    Effect.gen(function*() {
      const net = testNetwork()
      assert.isString(net.wsUrl, "the local network names its WebSocket endpoint")
      const got = yield* Deferred.make<Head>()
      const before = BigInt((yield* rpc(net.rpcUrl, "eth_blockNumber")) as string)
      const fiber = yield* Effect.forkChild(followHeads(net.wsUrl!, (head) => {
        if (head.number > before) Deferred.doneUnsafe(got, Effect.succeed(head))
      }))
      // The subscription is made before the block (a block mined before it would not be pushed).
      yield* Effect.sleep(Duration.millis(300))
      yield* rpc(net.rpcUrl, "evm_mine")
      const head = yield* Deferred.await(got).pipe(Effect.timeout(Duration.seconds(10)))
      assert.isAbove(Number(head.number), Number(before))
      // The hash is the block's own, as the RPC names it.
      const block = (yield* rpc(net.rpcUrl, "eth_getBlockByNumber", [`0x${head.number.toString(16)}`, false])) as { hash: string }
      assert.strictEqual(head.hash, block.hash)
      yield* Fiber.interrupt(fiber)
    }), 30_000)

  it.live("no WebSocket endpoint, a refused subscription, a socket that closes: HeadsLost", () =>
    Effect.gen(function*() {
      // Nothing listens there.
      const closed = yield* Effect.flip(followHeads("ws://127.0.0.1:1", () => undefined)).pipe(Effect.timeout(Duration.seconds(10)))
      assert.strictEqual(closed._tag, "HeadsLost")
      // A node without subscriptions (the method not found).
      const refusing = yield* fakeNode((id) => ({ id, error: { code: -32601, message: "the method eth_subscribe does not exist" } }))
      const refused = yield* Effect.flip(followHeads(refusing.url, () => undefined)).pipe(Effect.timeout(Duration.seconds(10)))
      assert.include(refused.message, "refused")
      assert.include(refused.message, "does not exist")
      // Subscribed, then the socket goes away.
      const dropping = yield* fakeNode((id) => ({ id, result: "0x1" }), true)
      const dropped = yield* Effect.flip(followHeads(dropping.url, () => undefined)).pipe(Effect.timeout(Duration.seconds(10)))
      assert.include(dropped.message, "lost")
    }).pipe(Effect.scoped), 30_000)
})
