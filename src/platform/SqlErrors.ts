/**
 * What a SQL error means for whoever meets it (the edge, the background loops): the database
 * unreachable (an outage: 503 and quiet retries), a value PostgreSQL refuses to store (the
 * client's: 400), or anything else (a bug).
 */
import { Cause } from "effect"
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
