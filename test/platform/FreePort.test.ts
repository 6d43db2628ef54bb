/**
 * Ports for what the service starts itself. The process test once failed because the
 * embedded PostgreSQL was handed the very port the test had chosen for the service's HTTP
 * server (both took what `listen(0)` gave, one after the other): a port is never handed out
 * twice by one process, and the configured `PORT` is never handed to a child.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Logger } from "effect"
import { createServer } from "node:http"
import * as net from "node:net"
import { freePort, httpPortToAvoid, listenScoped, portTaken } from "../../src/platform/FreePort.ts"

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

  it.live("listenScoped: a taken default gives way to a free port (logged); a taken chosen port fails in one line naming its variable; closing frees it", () =>
    Effect.gen(function*() {
      // Someone else holds a port (a second instance on the host).
      const holder = net.createServer()
      const held = yield* Effect.promise(() => new Promise<number>((resolve) => holder.listen(0, "127.0.0.1", () => resolve((holder.address() as net.AddressInfo).port))))
      yield* Effect.addFinalizer(() => Effect.sync(() => holder.close()))
      const lines: Array<string> = []
      const capture = Logger.layer([Logger.make((input) => void lines.push(String(input.message)))])
      const answering = () => createServer((_req, res) => res.end("ok"))
      const options = { name: "probe", variable: "PROBE_PORT", host: "127.0.0.1", port: held }

      // The default taken: another port, serving, and the log says which variable chooses.
      const bound = yield* Effect.scoped(Effect.gen(function*() {
        const port = yield* listenScoped(answering(), { ...options, fallBack: true })
        assert.notStrictEqual(port, held)
        assert.strictEqual(yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/`).then((r) => r.text())), "ok")
        return port
      })).pipe(Effect.provide(capture))
      assert.isTrue(lines.some((l) => l.includes(`port ${held} is taken`) && l.includes("PROBE_PORT")), lines.join("\n"))
      assert.isFalse(yield* Effect.promise(() => portTaken("127.0.0.1", bound)), "the scope's close freed the port")

      // A port the operator chose, taken: the start ends, in one line naming the variable.
      const exit = yield* Effect.exit(Effect.scoped(listenScoped(answering(), { ...options, fallBack: false })))
      assert.isTrue(Exit.isFailure(exit))
      const message = Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""
      assert.include(message, `probe: port ${held} on 127.0.0.1 is taken (PROBE_PORT): set PROBE_PORT to a free port, 0 for any, or off`)
    }).pipe(Effect.scoped))
})
