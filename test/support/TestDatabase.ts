/**
 * A fresh, migrated database of its own for each test file, in the run's shared
 * embedded PostgreSQL (see globalSetup.ts).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { inject } from "vitest"
import { runMigrations } from "../../src/db/Database.ts"

export const testDatabaseName = () => `test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`

const adminLayer = () => {
  const pg = inject("pg")
  return PgClient.layer({
    host: pg.host,
    port: pg.port,
    username: pg.user,
    password: Redacted.make(pg.password),
    database: "postgres",
    maxConnections: 1
  })
}

/** The database globalSetup migrates once; `TestDatabaseLive` copies it (nobody connects to it after). */
export const MIGRATED_TEMPLATE = "das_migrated_template"

/** An empty database (for a test of what the service does to a database it starts on). */
export const createDatabase = (name: string, options?: { readonly migrated?: boolean }) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    yield* sql.unsafe(options?.migrated === true ? `CREATE DATABASE ${name} TEMPLATE ${MIGRATED_TEMPLATE}` : `CREATE DATABASE ${name}`)
  }).pipe(Effect.provide(adminLayer()), Effect.scoped)

export const databaseUrl = (name: string) => {
  const pg = inject("pg")
  return `postgres://${pg.user}:${pg.password}@${pg.host}:${pg.port}/${name}`
}

/**
 * PgClient + SqlClient on a new migrated database: a copy of the run's migrated template (the
 * migrations still run, and find nothing left to do). `create: false`: attach to an existing one,
 * e.g. a second service instance.
 */
export const TestDatabaseLive = (options?: { readonly name?: string; readonly maxConnections?: number; readonly create?: boolean }) => {
  const name = options?.name ?? testDatabaseName()
  return Layer.effectDiscard(runMigrations).pipe(
    Layer.provideMerge(
      Layer.unwrap(
        Effect.as(
          options?.create === false ? Effect.void : createDatabase(name, { migrated: true }),
          PgClient.layer({ url: Redacted.make(databaseUrl(name)), maxConnections: options?.maxConnections ?? 10 })
        )
      )
    )
  )
}
