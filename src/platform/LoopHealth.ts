/**
 * Background loops and database outages (issue 31 item 7): while the database is unreachable
 * every pass of every loop fails the same way, and logging each failure with its cause wrote a
 * stack trace per tick (223 in 40 s). A loop's health logs ONE line when the loop first finds
 * the database gone and ONE when a pass succeeds again, and stays quiet in between; any other
 * failure is logged as before, with its cause.
 *
 * "Unreachable" is the edge's classification (src/api/DatabaseOutage.ts): a connection error,
 * or SQLSTATE classes 08, 53 and 57P01–57P04, found anywhere in the cause (a failure or a defect,
 * or wrapped as an error's cause).
 */
import { Cause, Effect } from "effect"
import { classifySqlError, findSqlError } from "./SqlErrors.ts"

/** Whether the cause is the database being unreachable. */
export const isDatabaseOutage = (cause: Cause.Cause<unknown>): boolean => {
  const e = findSqlError(cause)
  return e !== undefined && classifySqlError(e) === "unavailable"
}

export interface LoopHealth {
  /** A pass (or a part of one) went through: after an outage, logs once that the loop is back. */
  readonly succeeded: Effect.Effect<void>
  /**
   * A pass (or a part of one) failed: an outage is logged once per outage (without its cause),
   * anything else with `message` and its cause.
   */
  readonly failed: (cause: Cause.Cause<unknown>, message: string) => Effect.Effect<void>
  /** `effect` as one pass: `fallback` when it fails (logged as `failed` says); interruption passes through. */
  readonly pass: <A, E, R>(effect: Effect.Effect<A, E, R>, fallback: A, message: string) => Effect.Effect<A, never, R>
  /** Whether the loop is in an outage it reported. */
  readonly isDown: Effect.Effect<boolean>
}

/** The health of the loop called `loop` (the log lines' prefix). */
export const makeLoopHealth = (loop: string): LoopHealth => {
  let downSince: number | undefined
  const succeeded = Effect.suspend(() => {
    if (downSince === undefined) return Effect.void
    const seconds = Math.round((Date.now() - downSince) / 1000)
    downSince = undefined
    return Effect.logInfo(`${loop}: the database is back (after ${seconds}s); resuming`)
  })
  const failed = (cause: Cause.Cause<unknown>, message: string) =>
    Effect.suspend(() => {
      if (!isDatabaseOutage(cause)) return Effect.logWarning(message, cause)
      if (downSince !== undefined) return Effect.void
      downSince = Date.now()
      const reason = findSqlError(cause)?.message ?? "connection lost"
      return Effect.logWarning(`${loop}: the database is unreachable (${reason}); retrying quietly until it is back`)
    })
  const pass = <A, E, R>(effect: Effect.Effect<A, E, R>, fallback: A, message: string): Effect.Effect<A, never, R> =>
    effect.pipe(
      Effect.tap(() => succeeded),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.interrupt : Effect.as(failed(cause, message), fallback)
      )
    )
  return { succeeded, failed, pass, isDown: Effect.sync(() => downSince !== undefined) }
}
