/**
 * What the edge makes of a SQL error that reached it (every service turns unexpected
 * SQL errors into defects): the database being unreachable is an outage (503 with
 * `Retry-After`), a value PostgreSQL refuses to store is the client's (400), anything
 * else is a bug (500, logged).
 *
 * An outage is logged once when it starts and once when it ends: while it lasts a
 * probe pings the database every second, so the log does not fill with one line per
 * request and the service notices by itself that it is back.
 */
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { SqlClient } from "effect/sql"

export { classifySqlError, findSqlError, type SqlErrorClass } from "../platform/SqlErrors.ts"

export class DatabaseOutage extends Context.Service<DatabaseOutage, {
  /** Records that the database was found unreachable; logs only when an outage starts. */
  readonly report: (e: SqlError) => Effect.Effect<void>
  readonly isDown: Effect.Effect<boolean>
}>()("das/api/DatabaseOutage") {
  static readonly layer = Layer.effect(
    DatabaseOutage,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const scope = yield* Effect.scope
      let since: number | undefined
      const probe = sql`SELECT 1`.pipe(
        Effect.retry(Schedule.spaced(Duration.seconds(1))),
        Effect.andThen(Effect.suspend(() => {
          const seconds = since === undefined ? 0 : Math.round((Date.now() - since) / 1000)
          since = undefined
          return Effect.logInfo(`database: reachable again after ${seconds}s`)
        }))
      )
      const report = (e: SqlError) =>
        Effect.suspend(() => {
          if (since !== undefined) return Effect.void
          since = Date.now()
          return Effect.logWarning(`database: unreachable (${e.message}); answering 503 until it is back`).pipe(
            Effect.andThen(Effect.forkIn(probe, scope)),
            Effect.asVoid
          )
        })
      return DatabaseOutage.of({ report, isDown: Effect.sync(() => since !== undefined) })
    })
  )
}
