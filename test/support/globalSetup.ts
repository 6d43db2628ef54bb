/**
 * One embedded PostgreSQL (each test file creates its own database in it) and the local
 * ERC-4337 networks of the default run (two chains: LOCAL_CHAIN_IDS) for the whole test
 * run, all stopped when the run ends.
 */
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs/promises"
import type { TestProject } from "vitest/node"
import { LOCAL_CHAIN_IDS, startAll, toJson } from "../../src/chain/LocalNetwork.ts"
import { startEmbeddedPostgres } from "../../src/db/EmbeddedPostgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    pg: { host: string; port: number; user: string; password: string }
    /** The run's primary local ERC-4337 network (anvil + EntryPoint + Delegation Framework + Alto). */
    network: ReturnType<typeof toJson>
    /** Every local network of the run, the primary first (the second chain: `networks[1]`). */
    networks: Array<ReturnType<typeof toJson>>
  }
}

export default async function setup(project: TestProject) {
  // Not under a private temp folder: the server runs as its own user and must reach its data folder.
  const databaseDir = `/tmp/das-test-pg-${process.pid}-${Date.now()}`
  const scope = Effect.runSync(Scope.make())
  const [pg, networks] = await Effect.runPromise(
    Effect.all([startEmbeddedPostgres({ databaseDir }), startAll(LOCAL_CHAIN_IDS)], { concurrency: 2 }).pipe(Scope.provide(scope))
  )
  project.provide("pg", { host: pg.host, port: pg.port, user: pg.user, password: pg.password })
  project.provide("network", toJson(networks[0]!))
  project.provide("networks", networks.map(toJson))
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fs.rm(databaseDir, { recursive: true, force: true })
  }
}
