/**
 * The service as its own OS process (`src/main.ts`), for claims about processes:
 * restarts, SIGTERM, and several replicas over one database.
 */
import { Effect } from "effect"
import { spawn, type ChildProcess } from "node:child_process"
import * as path from "node:path"
import { configEnvOf, toJson } from "../../src/chain/LocalNetwork.ts"
import { freePort } from "../../src/platform/FreePort.ts"
import { testNetworks } from "./TestChain.ts"
import { databaseUrl } from "./TestDatabase.ts"

const root = path.resolve(import.meta.dirname, "../..")

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly baseUrl: string
  readonly output: () => string
}

/**
 * Starts `src/main.ts` with `env` on a free port and waits until it is ready: as `npm start`
 * runs it (node itself with tsx's loader, so SIGTERM reaches the service directly; the tsx
 * CLI relays signals and SIGKILLs a child slow to answer), or through `npm start` itself
 * (`viaNpm`: the child is npm, which passes signals on).
 */
/**
 * How long a start may take to become ready: as generous as the service's own bound on its
 * children (LOCAL_READY_TIMEOUT, 3 minutes), and then some. A test that starts the service
 * takes its timeout from it (`startsTimeout`), not from a figure of its own.
 */
export const START_BOUND_MS = 300_000
/** A test's timeout for `starts` starts of the service in a row, plus `restMs` of its own work. */
export const startsTimeout = (starts: number, restMs = 60_000) => starts * START_BOUND_MS + restMs

export const startService = (
  env: Record<string, string>,
  options: {
    readonly viaNpm?: boolean
    /** Keys left out of the service's environment (e.g. METRICS_PORT, set to 0 by default here). */
    readonly unset?: ReadonlyArray<string>
  } = {}
) =>
  Effect.promise(async (): Promise<ServiceProcess> => {
    const port = env.PORT ?? String(await freePort())
    const [command, args] = options.viaNpm === true
      ? ["npm", ["start", "--silent"]]
      : [process.execPath, ["--import", "tsx", "src/main.ts"]]
    const fullEnv: Record<string, string | undefined> = {
      ...process.env,
      LOG_FORMAT: "json",
      LOG_ACCESS_LEVEL: "debug",
      METRICS_PORT: "0",
      X402_FACILITATOR_PORT: "off",
      ...env,
      PORT: port,
      HOST: "127.0.0.1"
    }
    for (const key of options.unset ?? []) delete fullEnv[key]
    const child = spawn(command, args, {
      cwd: root,
      env: fullEnv,
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so a test can stop everything it started (killGroup).
      detached: true
    })
    let output = ""
    child.stdout!.on("data", (d) => (output += d))
    child.stderr!.on("data", (d) => (output += d))
    const baseUrl = `http://127.0.0.1:${port}`
    const deadline = Date.now() + START_BOUND_MS
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`service exited early: ${output}`)
      const ok = await fetch(`${baseUrl}/health/ready`, { signal: AbortSignal.timeout(5000) }).then((r) => r.ok, () => false)
      if (ok) return { child, baseUrl, output: () => output }
      await new Promise((r) => setTimeout(r, 100))
    }
    // The whole group: an embedded PostgreSQL the service started must not outlive it.
    killGroup(child)
    throw new Error(`service did not become ready: ${output}`)
  })

/** SIGKILL to the service's process group (the service and whatever it started). */
export const killGroup = (child: ChildProcess) => {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
  } catch {
    // already gone
  }
}

/** SIGTERM; resolves with the exit code. */
export const stopService = (child: ChildProcess) =>
  Effect.promise(() =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode)
      child.once("exit", (code) => resolve(code))
      child.kill("SIGTERM")
    })
  )

/** Environment for a service process on the run's shared chain and a given test database. */
export const replicaEnv = (database: string, overrides: Record<string, string> = {}): Record<string, string> => {
  return {
    DATABASE_URL: databaseUrl(database),
    ...configEnvOf(testNetworks().map(toJson)),
    SIWE_DOMAIN: "app.test",
    SIWE_URI: "https://app.test",
    ANCHOR_INTERVAL: "0 seconds",
    ...overrides
  }
}
