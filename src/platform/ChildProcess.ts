/**
 * The processes the service starts itself (embedded PostgreSQL, anvil, Alto): each spawned in
 * its own process group under a tiny shell guard that stops it when this process dies,
 * however it dies (kill -9 included), and waited for until it answers, within a generous bound
 * (`LOCAL_READY_TIMEOUT`) with its progress in the log.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { Config, Duration, Effect, Fiber, Option, Schedule } from "effect"

/** Children still running, killed synchronously if this process exits without closing scopes. */
const running = new Set<ChildProcess>()
let exitHookInstalled = false
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on("exit", () => {
    for (const child of running) signalGroup(child, "SIGKILL")
  })
}

const signalGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // already gone
  }
}

/**
 * The guard's script. Its stdin is a pipe from this process, which nothing else holds: when
 * this process dies the pipe reaches EOF and the guard signals the child's whole group. The
 * marker in the first word lets a later start tell a guarded child from an orphan
 * (EmbeddedPostgres.ts).
 */
export const GUARD_MARKER = "das-guard"
const guardScript = `: ${GUARD_MARKER}; s=$1; shift; exec 3<&0; "$@" </dev/null & c=$!; trap : INT TERM; ` +
  // The guard outlives its child, however signalled: its exit is the child's (PostgreSQL's pid file gone).
  `{ cat <&3 >/dev/null; kill -$s 0; } & while kill -0 $c 2>/dev/null; do wait $c; done`

export interface GuardedOptions {
  /** Set in the child's environment on top of the few keys it inherits. */
  readonly env?: Readonly<Record<string, string>>
  /** Every line the child prints is also appended here (the ring below keeps only the last ones). */
  readonly logFile?: string
  /** Echo the child's output to this process's stderr. */
  readonly verbose?: boolean
  /** What asks the child to stop, on close and when this process dies (default SIGTERM). */
  readonly stopSignal?: "TERM" | "INT"
  /** How long a stop may take before SIGKILL (default 2 s; anvil writing its state, PostgreSQL's checkpoint: more). */
  readonly stopGrace?: Duration.Duration
  /** Run as this user and group (PostgreSQL refuses to run as root). */
  readonly uid?: number
  readonly gid?: number
}

export interface Guarded {
  readonly child: ChildProcess
  /** The last 4,000 characters it printed. */
  readonly output: () => string
  readonly exited: () => boolean
}

/**
 * What a child sees of this process's environment: what a process needs to run (PATH, HOME,
 * temp folder, locale), never the service's own configuration or secrets (DATABASE_URL, keys, ...).
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
 * Spawns `command` in its own process group under the guard; closing the scope sends the stop
 * signal to the group, then SIGKILL after the grace period.
 */
export const spawnGuarded = (name: string, command: string, args: ReadonlyArray<string>, options: GuardedOptions = {}) =>
  Effect.acquireRelease(
    Effect.flatMap(childEnv, (inherited) =>
      Effect.sync((): Guarded => {
        const env = { ...inherited, ...options.env }
        installExitHook()
        const child = spawn("sh", ["-c", guardScript, "sh", options.stopSignal ?? "TERM", command, ...args], {
          detached: true,
          stdio: ["pipe", "pipe", "pipe"],
          env,
          ...(options.uid === undefined ? {} : { uid: options.uid }),
          ...(options.gid === undefined ? {} : { gid: options.gid })
        })
        const output: Array<string> = []
        const collect = (chunk: Buffer) => {
          const text = chunk.toString()
          output.push(text)
          if (output.length > 200) output.shift()
          if (options.logFile !== undefined) fs.appendFile(options.logFile, text, () => {})
          if (options.verbose === true) process.stderr.write(`[${name}] ${text}`)
        }
        child.stdout?.on("data", collect)
        child.stderr?.on("data", collect)
        // A spawn that fails (no such user, ...) shows as an exit; the error is in the output.
        child.on("error", (e) => output.push(String(e)))
        // The pipes must not keep this process alive on their own.
        child.unref()
        ;(child.stdout as unknown as { unref?: () => void } | null)?.unref?.()
        ;(child.stderr as unknown as { unref?: () => void } | null)?.unref?.()
        ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
        running.add(child)
        return {
          child,
          output: () => output.join("").slice(-4000),
          exited: () => child.exitCode !== null || child.signalCode !== null
        }
      })),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          running.delete(child)
          return resume(Effect.void)
        }
        const grace = Duration.toMillis(options.stopGrace ?? Duration.seconds(2))
        const timer = setTimeout(() => signalGroup(child, "SIGKILL"), grace)
        child.once("exit", () => {
          clearTimeout(timer)
          running.delete(child)
          resume(Effect.void)
        })
        signalGroup(child, options.stopSignal === "INT" ? "SIGINT" : "SIGTERM")
        child.stdin?.end()
      })
  )

/**
 * How long the service waits for each process it starts to answer (`LOCAL_READY_TIMEOUT`,
 * default 3 minutes): generous, since a busy machine slows a start several times over, and
 * bounded, so that a child that never answers ends the start with its output.
 */
export const LocalReadyTimeout = Config.Duration("LOCAL_READY_TIMEOUT").pipe(Config.withDefault(Duration.minutes(3)))

/** Every 10 s of waiting, one line: `alto 31337: waiting for readiness (12 s of 180 s)`. */
const PROGRESS_EVERY = Duration.seconds(10)

export class NotReady extends Error {
  constructor(readonly reason: "exited" | "timeout", message: string) {
    super(message)
  }
}

/**
 * Runs `probe` every 50 ms until it succeeds, while the child lives, within
 * `LOCAL_READY_TIMEOUT`; logs progress every 10 s. Fails with `NotReady` when the child exited
 * (its output included) or the bound passed.
 */
export const waitUntilReady = <A, E>(
  label: string,
  probe: Effect.Effect<A, E>,
  child: Pick<Guarded, "output" | "exited">
): Effect.Effect<A, NotReady> =>
  Effect.gen(function*() {
    const bound = yield* Effect.orDie(LocalReadyTimeout)
    const boundS = Math.round(Duration.toSeconds(bound))
    const started = Date.now()
    const progress = yield* Effect.forkChild(
      Effect.sleep(PROGRESS_EVERY).pipe(
        Effect.andThen(Effect.suspend(() =>
          Effect.logInfo(`${label}: waiting for readiness (${Math.round((Date.now() - started) / 1000)} s of ${boundS} s)`)
        )),
        Effect.forever
      )
    )
    const exited = () =>
      new NotReady("exited", `${label} exited during start:\n${child.output()}`)
    return yield* Effect.suspend((): Effect.Effect<A, E | NotReady> => child.exited() ? Effect.fail(exited()) : probe).pipe(
      Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), while: () => !child.exited() }),
      Effect.mapError(() => exited()),
      Effect.timeoutOrElse({
        duration: bound,
        orElse: () =>
          Effect.fail(
            new NotReady("timeout", `${label} not ready in ${boundS} s (LOCAL_READY_TIMEOUT):\n${child.output()}`)
          )
      }),
      Effect.ensuring(Fiber.interrupt(progress))
    )
  })
