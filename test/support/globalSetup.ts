/**
 * One embedded PostgreSQL (each test file creates its own database in it) and one
 * local ERC-4337 network for the whole test run, both stopped when the run ends.
 */
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs/promises"
import type { TestProject } from "vitest/node"
import { make as startLocalNetwork, toJson } from "../../src/chain/LocalNetwork.ts"
import { startEmbeddedPostgres } from "../../src/db/EmbeddedPostgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    pg: { host: string; port: number; user: string; password: string }
    /** The run's local ERC-4337 network (anvil + EntryPoint + Delegation Framework + Alto). */
    network: ReturnType<typeof toJson>
  }
}

export default async function setup(project: TestProject) {
  // Not under a private temp folder: the server runs as its own user and must reach its data folder.
  const databaseDir = `/tmp/das-test-pg-${process.pid}-${Date.now()}`
  const scope = Effect.runSync(Scope.make())
  const [pg, network] = await Effect.runPromise(
    Effect.all([startEmbeddedPostgres({ databaseDir }), startLocalNetwork()], { concurrency: 2 }).pipe(Scope.provide(scope))
  )
  project.provide("pg", { host: pg.host, port: pg.port, user: pg.user, password: pg.password })
  project.provide("network", toJson(network))
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fs.rm(databaseDir, { recursive: true, force: true })
  }
}
