/**
 * A real PgBouncer (Debian's `pgbouncer` package, 1.18 on bookworm) on loopback in front of a
 * PostgreSQL, for the claims of docs/operations.md, "PgBouncer": shared by
 * test/db/PgBouncer.test.ts and `npm run scenario:pgbouncer` (bench/pgbouncer.ts).
 *
 * `findPgbouncer` installs the package with apt-get when it is missing and the process may
 * (root); otherwise it says why there is none, for the caller to report.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "../../src/platform/FreePort.ts"

const BINARY = "/usr/sbin/pgbouncer"

/** The binary's path, or why there is none. */
export const findPgbouncer = (): { readonly path: string } | { readonly missing: string } => {
  if (fs.existsSync(BINARY)) return { path: BINARY }
  if (process.getuid?.() !== 0) return { missing: `${BINARY} is not installed and this is not root (apt-get install pgbouncer)` }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  const install = () =>
    execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "pgbouncer"], { stdio: "ignore", env })
  try {
    try {
      install()
    } catch {
      execFileSync("apt-get", ["update"], { stdio: "ignore", env })
      install()
    }
  } catch (e) {
    return { missing: `apt-get install pgbouncer failed: ${e instanceof Error ? e.message : String(e)}` }
  }
  return fs.existsSync(BINARY) ? { path: BINARY } : { missing: `apt-get installed pgbouncer but ${BINARY} is absent` }
}

export interface PgBouncer {
  /** `postgres://user:pass@127.0.0.1:<pgbouncer>/<database>`: the same database, through the pooler. */
  readonly url: string
  readonly port: number
  readonly process: ChildProcess
  readonly log: () => string
  readonly stop: () => Promise<void>
}

/**
 * Starts PgBouncer in `poolMode` in front of the PostgreSQL of `upstreamUrl` (one database),
 * with `poolSize` server connections: fewer than the clients' connections, so that clients
 * share server connections between transactions (what transaction mode is for).
 */
export const startPgbouncer = async (options: {
  readonly binary: string
  readonly upstreamUrl: string
  readonly poolMode: "session" | "transaction"
  readonly poolSize?: number
}): Promise<PgBouncer> => {
  const upstream = new URL(options.upstreamUrl)
  const database = upstream.pathname.slice(1)
  const user = decodeURIComponent(upstream.username)
  const password = decodeURIComponent(upstream.password)
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "das-pgbouncer-"))
  const quote = (s: string) => `"${s.replaceAll('"', '""')}"`
  fs.writeFileSync(path.join(dir, "userlist.txt"), `${quote(user)} ${quote(password)}\n`, { mode: 0o600 })
  fs.writeFileSync(
    path.join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `${database} = host=${upstream.hostname} port=${upstream.port || "5432"} dbname=${database} user=${user} password=${password}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir =`,
      `auth_type = plain`,
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.poolSize ?? 2}`,
      "max_client_conn = 200",
      // What sql-pg sends in its startup packet besides application_name (tracked by PgBouncer).
      "ignore_startup_parameters = extra_float_digits,options",
      `logfile = ${path.join(dir, "pgbouncer.log")}`,
      ""
    ].join("\n")
  )
  // PgBouncer refuses to run as root; the files above are then the postgres user's to read.
  const asRoot = process.getuid?.() === 0
  if (asRoot) execFileSync("chown", ["-R", "postgres", dir])
  const child = spawn(
    asRoot ? "runuser" : options.binary,
    asRoot ? ["-u", "postgres", "--", options.binary, path.join(dir, "pgbouncer.ini")] : [path.join(dir, "pgbouncer.ini")],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  let output = ""
  child.stdout!.on("data", (d) => (output += d))
  child.stderr!.on("data", (d) => (output += d))
  const log = () => {
    try {
      return output + fs.readFileSync(path.join(dir, "pgbouncer.log"), "utf8")
    } catch {
      return output
    }
  }
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited: ${log()}`)
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => (socket.end(), resolve(true)))
      socket.once("error", () => resolve(false))
    })
    if (open) break
    if (i > 100) {
      child.kill("SIGKILL")
      throw new Error(`pgbouncer did not listen: ${log()}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  const url = new URL(options.upstreamUrl)
  url.hostname = "127.0.0.1"
  url.port = String(port)
  return {
    url: url.toString(),
    port,
    process: child,
    log,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => {
          fs.rmSync(dir, { recursive: true, force: true })
          resolve()
        })
        child.kill("SIGTERM")
      })
  }
}
