/**
 * The local network's child processes (anvil, Alto): spawned under the guard of
 * `platform/ChildProcess.ts` (they stop when this process dies, however it dies), each on a
 * free loopback port (taken again on another one when something else took it first), and
 * waited for until they answer JSON-RPC, within `LOCAL_READY_TIMEOUT`.
 */
import { Data, Effect, type Scope } from "effect"
import { type Guarded, waitUntilReady } from "../platform/ChildProcess.ts"
import { freePort as freeLoopbackPort, httpPortToAvoid } from "../platform/FreePort.ts"

export { type Guarded, spawnGuarded } from "../platform/ChildProcess.ts"

export class LocalNetworkError extends Data.TaggedError("LocalNetworkError")<{
  readonly step: string
  readonly message: string
  readonly cause?: unknown
}> {}

/** A loopback port for a child process (`platform/FreePort.ts`), never the service's own HTTP port. */
export const freePort = Effect.flatMap(httpPortToAvoid, (avoid) =>
  Effect.tryPromise({
    try: () => freeLoopbackPort(avoid),
    catch: (cause) => new LocalNetworkError({ step: "port", message: String(cause), cause })
  }))

/** POSTs one JSON-RPC request; succeeds with `result` when there is one. */
const rpcProbe = (url: string, method: string) =>
  Effect.tryPromise({
    try: async (signal) => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
        signal
      })
      const body = (await res.json()) as { result?: unknown }
      if (body.result === undefined) throw new Error(`${method}: no result`)
      return body.result
    },
    catch: (cause) => new LocalNetworkError({ step: method, message: String(cause), cause })
  })

/** Waits until the child answers `method` at `url` (readiness-driven, bounded by `LOCAL_READY_TIMEOUT`). */
export const waitReady = (label: string, url: string, method: string, child: Pick<Guarded, "output" | "exited">) =>
  waitUntilReady(label, rpcProbe(url, method), child).pipe(
    Effect.mapError((e) => new LocalNetworkError({ step: label, message: e.message, cause: e }))
  )

/** What a process prints when its port was taken between our check and its bind. */
const PORT_TAKEN = /address already in use|EADDRINUSE/i
const PORT_ATTEMPTS = 5

/**
 * Starts a child listening on a free port and returns it with the port once it has started
 * listening (its own process exited with "address in use" when another process took the port
 * first: it is started again on another free port, up to 5 times). The readiness wait itself
 * is the caller's.
 */
export const spawnOnFreePort = <R>(
  label: string,
  launch: (port: number) => Effect.Effect<Guarded, never, R | Scope.Scope>,
  ready: (port: number, child: Guarded) => Effect.Effect<unknown, LocalNetworkError>
): Effect.Effect<{ readonly port: number; readonly child: Guarded }, LocalNetworkError, R | Scope.Scope> =>
  Effect.gen(function*() {
    for (let attempt = 1;; attempt++) {
      const port = yield* freePort
      const child = yield* launch(port)
      const outcome = yield* Effect.result(ready(port, child))
      if (outcome._tag === "Success") return { port, child }
      const taken = child.exited() && PORT_TAKEN.test(child.output())
      if (!taken || attempt >= PORT_ATTEMPTS) return yield* Effect.fail(outcome.failure)
      yield* Effect.logWarning(`${label}: port ${port} was taken by another process; starting again on another free port`)
    }
  })

