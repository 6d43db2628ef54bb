/**
 * Ports for what the service starts itself. The process test once failed because the
 * embedded PostgreSQL was handed the very port the test had chosen for the service's HTTP
 * server (both took what `listen(0)` gave, one after the other): a port is never handed out
 * twice by one process, and the configured `PORT` is never handed to a child.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as net from "node:net"
import { freePort, httpPortToAvoid } from "../../src/platform/FreePort.ts"

const withEnv = (env: Record<string, string>) => Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))

describe("free ports", () => {
  it.effect("one process never hands out the same port twice, and each is free to bind", () =>
    Effect.promise(async () => {
      const ports = []
      for (let i = 0; i < 200; i++) ports.push(await freePort())
      assert.strictEqual(new Set(ports).size, 200)
      const last = ports.at(-1)!
      await new Promise<void>((resolve, reject) => {
        const server = net.createServer().once("error", reject).listen(last, "127.0.0.1", () => server.close(() => resolve()))
      })
    }))

  it.effect("the configured HTTP port is the one the service's children avoid", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* httpPortToAvoid.pipe(withEnv({ PORT: "44445" })), [44445])
      assert.deepStrictEqual(yield* httpPortToAvoid.pipe(withEnv({})), [])
      assert.deepStrictEqual(yield* httpPortToAvoid.pipe(withEnv({ PORT: "not a port" })), [])
    }))
})
