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
import { Cause, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"

export type SqlErrorClass = "unavailable" | "unstorable" | "bug"

/**
 * SQLSTATEs of a server that is going away or cannot take the connection, and a write that
 * reached a read-only node (25006: a standby, or a primary being demoted, during a failover).
 */
const unavailableStates = /^(08|53|57P0[1-4]|25006)/

const sqlStateOf = (e: SqlError): string | undefined => {
  const cause = e.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined
}

export const classifySqlError = (e: SqlError): SqlErrorClass => {
  if (e.reason._tag === "ConnectionError") return "unavailable"
  const state = sqlStateOf(e)
  if (state !== undefined && unavailableStates.test(state)) return "unavailable"
  // Class 22: data exceptions (a NUL byte, a number out of range, bad encoding).
  if (state !== undefined && state.startsWith("22")) return "unstorable"
  return "bug"
}

/** The first `SqlError` in a cause, as a failure or a defect (also wrapped as an error's `cause`). */
export const findSqlError = (cause: Cause.Cause<unknown>): SqlError | undefined => {
  for (const reason of cause.reasons) {
    let value: unknown = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    for (let depth = 0; depth < 4 && typeof value === "object" && value !== null; depth++) {
      if (isSqlError(value)) return value
      value = (value as { cause?: unknown }).cause
    }
  }
  return undefined
}

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
