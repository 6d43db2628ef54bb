/**
 * The local network's child processes (anvil, Alto): spawned in their own process group
 * under a guard that kills them when this process dies however it dies, given only the
 * environment a process needs, stopped with the scope, and waited for until they answer
 * JSON-RPC.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { Config, Data, Duration, Effect, Option, Schedule } from "effect"
import { freePort as freeLoopbackPort, httpPortToAvoid } from "../platform/FreePort.ts"

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

/** Children still running, killed synchronously if this process exits without closing scopes. */
const running = new Set<ChildProcess>()
let exitHookInstalled = false
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on("exit", () => {
    for (const child of running) killGroup(child, "SIGKILL")
  })
}

const killGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // already gone
  }
}

/**
 * What anvil and Alto see of this process's environment: what a process needs to run
 * (PATH, HOME, temp folder, locale), never the service's own configuration or secrets
 * (DATABASE_URL, keys, ...).
 */
const CHILD_ENV_KEYS = ["PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "LC_ALL", "TZ", "USER", "SHELL"] as const
const childEnv = Effect.gen(function*() {
  const env: Record<string, string> = { DO_NOT_TRACK: "1" }
  for (const key of CHILD_ENV_KEYS) {
    const value = yield* Config.option(Config.String(key))
    if (Option.isSome(value)) env[key] = value.value
  }
  return env
}).pipe(Effect.orDie)

/**
 * Spawns `command` in its own process group under a tiny shell guard that kills the group
 * when its stdin (a pipe from this process) reaches EOF, i.e. when this process dies,
 * however it dies. Closing the scope sends SIGTERM to the group, then SIGKILL after 2 s.
 */
export const spawnGuarded = (
  name: string,
  command: string,
  args: ReadonlyArray<string>,
  verbose: boolean,
  /** Set in the child's environment on top of the few keys it inherits. */
  extraEnv: Readonly<Record<string, string>> = {},
  /** Every line the child prints is also appended here (the ring below keeps only the last ones). */
  logFile?: string
) =>
  Effect.acquireRelease(
    Effect.flatMap(childEnv, (inherited) => Effect.sync(() => {
      const env = { ...inherited, ...extraEnv }
      installExitHook()
      const guard = `exec 3<&0; "$@" </dev/null & c=$!; { cat <&3 >/dev/null; kill -TERM 0; } & wait $c`
      const child = spawn("sh", ["-c", guard, "sh", command, ...args], {
        detached: true,
        stdio: ["pipe", "pipe", "pipe"],
        env
      })
      const output: Array<string> = []
      const collect = (chunk: Buffer) => {
        const text = chunk.toString()
        output.push(text)
        if (output.length > 200) output.shift()
        if (logFile !== undefined) fs.appendFile(logFile, text, () => {})
        if (verbose) process.stderr.write(`[${name}] ${text}`)
      }
      child.stdout?.on("data", collect)
      child.stderr?.on("data", collect)
      // The pipes must not keep this process alive on their own.
      child.unref()
      ;(child.stdout as unknown as { unref?: () => void } | null)?.unref?.()
      ;(child.stderr as unknown as { unref?: () => void } | null)?.unref?.()
      ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
      running.add(child)
      return { child, output: () => output.join("").slice(-4000) }
    })),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          running.delete(child)
          return resume(Effect.void)
        }
        const timer = setTimeout(() => killGroup(child, "SIGKILL"), 2000)
        child.once("exit", () => {
          clearTimeout(timer)
          running.delete(child)
          resume(Effect.void)
        })
        killGroup(child, "SIGTERM")
        child.stdin?.end()
      })
  )

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

export const waitReady = (name: string, url: string, method: string, logs: () => string, exited: () => boolean) =>
  Effect.suspend(() =>
    exited()
      ? Effect.fail(new LocalNetworkError({ step: name, message: `${name} exited during start:\n${logs()}` }))
      : rpcProbe(url, method)
  ).pipe(
    Effect.retry({
      schedule: Schedule.spaced(Duration.millis(50)),
      while: () => !exited()
    }),
    Effect.timeoutOrElse({
      duration: Duration.seconds(30),
      orElse: () => Effect.fail(new LocalNetworkError({ step: name, message: `${name} not ready in 30 s:\n${logs()}` }))
    })
  )
