/**
 * `DATABASE_URL` is honoured: the service's own database layer connects to the
 * configured server and migrates it (the embedded default is covered by
 * Process.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as os from "node:os"
import { DatabaseLive } from "../../src/db/Database.ts"
import { createDatabase, databaseUrl, testDatabaseName } from "../support/TestDatabase.ts"

describe("database", () => {
  it.live("with DATABASE_URL the service migrates and uses that server; migrating twice is a no-op", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      yield* createDatabase(name)
      const config = ConfigProvider.layer(ConfigProvider.fromUnknown({ DATABASE_URL: databaseUrl(name) }))
      const tables = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ name: string; db: string }>`
          SELECT table_name AS name, current_database() AS db FROM information_schema.tables
          WHERE table_schema = 'public' ORDER BY table_name`
        return rows
      })
      const first = yield* tables.pipe(Effect.provide(Layer.fresh(DatabaseLive.pipe(Layer.provide(config)))))
      const second = yield* tables.pipe(Effect.provide(Layer.fresh(DatabaseLive.pipe(Layer.provide(config)))))
      assert.isTrue(first.every((t) => t.db === name))
      for (const table of ["accounts", "sessions", "signin_nonces", "effect_sql_migrations"]) {
        assert.isTrue(first.some((t) => t.name === table), table)
      }
      assert.deepStrictEqual(second, first)
    }))

  it.live("each process names its connections (application_name): its host and pid, or DATABASE_APPLICATION_NAME", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      yield* createDatabase(name)
      const nameOf = (overrides: Record<string, string>) => {
        const config = ConfigProvider.layer(ConfigProvider.fromUnknown({ DATABASE_URL: databaseUrl(name), ...overrides }))
        return Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const [row] = yield* sql<{ name: string }>`SELECT current_setting('application_name') AS name`
          return row!.name
        }).pipe(Effect.provide(Layer.fresh(DatabaseLive.pipe(Layer.provide(config)))))
      }
      assert.strictEqual(yield* nameOf({}), `das ${os.hostname()} pid ${process.pid}`.slice(0, 63))
      assert.strictEqual(yield* nameOf({ DATABASE_APPLICATION_NAME: "das-worker-7" }), "das-worker-7")
    }))
})
