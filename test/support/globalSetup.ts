/**
 * One embedded PostgreSQL (each test file creates its own database in it) and the local
 * ERC-4337 networks of the default run (two chains: LOCAL_CHAIN_IDS) for the whole test
 * run, all stopped when the run ends.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { LOCAL_CHAIN_IDS, startAll, toJson } from "../../src/chain/LocalNetwork.ts"
import { runMigrations } from "../../src/db/Database.ts"
import { startEmbeddedPostgres } from "../../src/db/EmbeddedPostgres.ts"
import { MIGRATED_TEMPLATE } from "./TestDatabase.ts"
import { keepHeadsFresh } from "./chainClock.ts"

declare module "vitest" {
  export interface ProvidedContext {
    pg: { host: string; port: number; user: string; password: string }
    /** The run's primary local ERC-4337 network (anvil + EntryPoint + Delegation Framework + Alto). */
    network: ReturnType<typeof toJson>
    /** Every local network of the run, the primary first (the second chain: `networks[1]`). */
    networks: Array<ReturnType<typeof toJson>>
  }
}

/**
 * A run killed outright (a timeout, kill -9) has its PostgreSQL and chains stopped by their
 * guards (src/platform/ChildProcess.ts), but its data folder stays: removed by the next run
 * when the run that made it is gone.
 */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}
const removeLeftovers = async () => {
  for (const name of await fs.readdir("/tmp").catch(() => [] as Array<string>)) {
    const pid = Number(/^das-test-pg-(\d+)-\d+$/.exec(name)?.[1])
    if (!Number.isInteger(pid) || pid === process.pid) continue
    // Neither the run that made it nor a server on it still alive.
    const postmaster = Number((await fs.readFile(path.join("/tmp", name, "postmaster.pid"), "utf8").catch(() => "")).split("\n")[0])
    if (alive(pid) || (postmaster > 0 && alive(postmaster))) continue
    await fs.rm(path.join("/tmp", name), { recursive: true, force: true })
  }
}

export default async function setup(project: TestProject) {
  await removeLeftovers()
  // Not under a private temp folder: the server runs as its own user and must reach its data folder.
  const databaseDir = `/tmp/das-test-pg-${process.pid}-${Date.now()}`
  // The bundlers' warnings (an operation dropped, a bundle that failed) stay beside the run's report.
  const logDir = path.resolve(".test-results")
  await fs.mkdir(logDir, { recursive: true })
  await Promise.all(LOCAL_CHAIN_IDS.map((id) => fs.rm(path.join(logDir, `alto-${id}.log`), { force: true })))
  const scope = Effect.runSync(Scope.make())
  const [pg, networks] = await Effect.runPromise(
    Effect.all([startEmbeddedPostgres({ databaseDir }), startAll(LOCAL_CHAIN_IDS, { logDir })], { concurrency: 2 }).pipe(Scope.provide(scope))
  )
  // Every migration, run once into a template: a test file's database is a copy of it (about
  // 0.1 s) instead of a fresh run of every migration (about 0.4 s, paid by some 200 databases).
  const pgUrl = (database: string) => `postgres://${pg.user}:${pg.password}@${pg.host}:${pg.port}/${database}`
  await Effect.runPromise(
    Effect.gen(function*() {
      const admin = yield* PgClient.PgClient
      yield* admin.unsafe(`CREATE DATABASE ${MIGRATED_TEMPLATE}`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(pgUrl("postgres")), maxConnections: 1 })))
  )
  await Effect.runPromise(
    runMigrations.pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(pgUrl(MIGRATED_TEMPLATE)), maxConnections: 1 }))
    )
  )
  project.provide("pg", { host: pg.host, port: pg.port, user: pg.user, password: pg.password })
  project.provide("network", toJson(networks[0]!))
  project.provide("networks", networks.map(toJson))
  const stopClock = keepHeadsFresh(networks.map((n) => n.rpcUrl))
  return async () => {
    stopClock()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fs.rm(databaseDir, { recursive: true, force: true })
  }
}
