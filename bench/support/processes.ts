/** Child processes and a private embedded PostgreSQL for the benchmarks. */
import { Effect, Exit, Scope } from "effect"
import { spawn, type ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { configEnvOf, type LocalNetworkJson } from "../../src/chain/LocalNetwork.ts"
import { startEmbeddedPostgres } from "../../src/db/EmbeddedPostgres.ts"
import { freePort } from "../../src/platform/FreePort.ts"

export const root = path.resolve(import.meta.dirname, "../..")

export const startPostgres = async () => {
  const databaseDir = `/tmp/das-bench-pg-${process.pid}`
  const scope = Effect.runSync(Scope.make())
  const pg = await Effect.runPromise(startEmbeddedPostgres({ databaseDir }).pipe(Scope.provide(scope)))
  return {
    url: `postgres://${pg.user}:${pg.password}@${pg.host}:${pg.port}/postgres`,
    /** The postmaster's process id (the first line of its pid file). */
    pid: Number(fs.readFileSync(path.join(databaseDir, "postmaster.pid"), "utf8").split("\n")[0]),
    stop: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      fs.rmSync(databaseDir, { recursive: true, force: true })
    }
  }
}

/** Starts `tsx <script>` with `env` and waits (up to `readySeconds`) until `readyUrl` answers 2xx/4xx. */
export const startProcess = async (script: string, env: Record<string, string>, readyUrl: string, readySeconds = 60) => {
  const child: ChildProcess = spawn(path.join(root, "node_modules/.bin/tsx"), [script], {
    cwd: root,
    // The service's metrics listener on a free port unless told (its default, 9464, may be taken on a shared machine).
    env: {
      ...process.env,
      METRICS_PORT: "0",
      X402_FACILITATOR_PORT: "off",
      // SERVICE_PROFILE_DIR=/tmp/prof: the service alone (not the benchmark, not its floors) runs
      // under `--cpu-prof`; read it with bench/support/profile-top.ts.
      ...(process.env.SERVICE_PROFILE_DIR !== undefined && script === "src/main.ts"
        ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.SERVICE_PROFILE_DIR}` }
        : {}),
      ...env
    },
    stdio: ["ignore", "pipe", "inherit"]
  })
  // The service logs to stdout; its last lines say why it did not become ready.
  let tail = ""
  child.stdout!.on("data", (chunk: Buffer) => void (tail = (tail + chunk.toString("utf8")).slice(-4000)))
  for (let i = 0; i < readySeconds * 10; i++) {
    if (child.exitCode !== null) break
    const ok = await fetch(readyUrl).then((r) => r.status < 500, () => false)
    if (ok) {
      const stop = () =>
        new Promise<void>((r) => {
          if (child.exitCode !== null || child.signalCode !== null) return r()
          child.once("exit", () => r())
          child.kill("SIGTERM")
        })
      return { child, stop }
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  child.kill("SIGKILL")
  throw new Error(`${script} did not become ready (exit ${child.exitCode}); its last output:\n${tail}`)
}

export { freePort }

/**
 * The service's environment in a benchmark: its database and port, the local network(s), JSON
 * logs, the benchmark's sign-in domain, and what would stop one benchmark client early off: the
 * per-IP sign-in and build rate limits and the per-signer sponsorship quota (every request comes
 * from one address, often from one signer). `unlimitedSponsorship` also lifts the per-address
 * quota and the chain's budget (a benchmark that sponsors more than a day's default of either).
 * `overrides` come last.
 */
export const serviceEnv = (
  options: {
    readonly databaseUrl: string
    readonly port: number
    readonly networks: LocalNetworkJson | ReadonlyArray<LocalNetworkJson>
    readonly unlimitedSponsorship?: boolean
  },
  overrides: Record<string, string> = {}
): Record<string, string> => ({
  DATABASE_URL: options.databaseUrl,
  PORT: String(options.port),
  LOG_FORMAT: "json",
  SIWE_DOMAIN: "bench.local",
  SIWE_URI: "http://bench.local",
  RATE_LIMIT_NONCE_PER_MINUTE: "0",
  RATE_LIMIT_SESSION_PER_MINUTE: "0",
  RATE_LIMIT_BUILDS_PER_MINUTE: "0",
  SPONSOR_QUOTA_OPS: "0",
  SPONSOR_QUOTA_GAS: "0",
  ...(options.unlimitedSponsorship === true
    ? { SPONSOR_ADDRESS_QUOTA_OPS: "0", SPONSOR_ADDRESS_QUOTA_GAS: "0", SPONSOR_BUDGET_OPS: "0", SPONSOR_BUDGET_GAS: "0" }
    : {}),
  ...configEnvOf(options.networks),
  ...overrides
})

/**
 * The processes of a child started by `startProcess` that run its script: the `tsx`
 * process and the node process it starts, not what the script starts in turn (the
 * service's embedded chain, say).
 */
const scriptProcesses = (pid: number, script: string): Array<number> => {
  const children = fs.readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number)
  )
  const runsScript = (p: number) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, "utf8").includes(script)
    } catch {
      return false
    }
  }
  return [pid, ...children.filter(runsScript).flatMap((c) => scriptProcesses(c, script))]
}

/**
 * CPU time (user + system, µs) used so far by a child's script processes, from /proc
 * (Linux; 10 ms resolution). CPU per request is steadier than requests/s on a shared
 * machine: it does not depend on how much of the CPU the process was given.
 */
export const cpuMicros = (child: ChildProcess, script: string): number =>
  scriptProcesses(child.pid!, script).reduce((sum, pid) => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return sum + ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
  }, 0)

/**
 * CPU time (µs, nanosecond-precise from `schedstat`: the main threads, where JavaScript runs)
 * used so far by a child's script processes: fine enough to read around one request.
 */
export const scriptCpuMicrosPrecise = (child: ChildProcess, script: string): number =>
  scriptProcesses(child.pid!, script).reduce((sum, pid) => {
    try {
      return sum + Number(fs.readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1000
    } catch {
      return sum
    }
  }, 0)

/** The children of a process, from /proc (Linux). */
const childrenOf = (pid: number): Array<number> =>
  fs.readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number)
  )

/**
 * CPU time (µs, nanosecond-precise from `schedstat`) used so far by a process and its
 * living children: PostgreSQL's postmaster and its backends, say. Time of children that
 * have exited is not counted, so measure over an interval in which none come or go (a
 * warmed connection pool).
 */
export const treeCpuMicros = (pid: number): number =>
  [pid, ...childrenOf(pid)].reduce((sum, p) => {
    try {
      return sum + Number(fs.readFileSync(`/proc/${p}/schedstat`, "utf8").split(" ")[0]) / 1000
    } catch {
      return sum
    }
  }, 0)
