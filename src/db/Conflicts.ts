/**
 * Lock conflicts between transactions: PostgreSQL breaks a deadlock by failing one of the
 * transactions in it (`40P01`), and a serializable or repeatable-read transaction can fail
 * on a concurrent update (`40001`). Either way the failed transaction rolled back whole, so
 * running it again is safe and is what the database expects of its client. Two writers
 * that take the same rows in different orders (a settlement locking a delegation, then the
 * owner's audit head; the chain follower the other way round) meet this under load.
 *
 * Services below a transaction often turn an `SqlError` into a defect (`Effect.orDie`): a
 * conflict that arrives as a defect is the same rollback and is retried the same way.
 *
 * Only a transaction of its own may be retried: inside a caller's transaction the failed
 * statement has aborted the caller's work too, and the caller decides.
 */
import { Effect, Option, Schedule } from "effect"
import { SqlClient, SqlError } from "effect/sql"

/**
 * Whether `error` is a lock conflict that rolled its transaction back (deadlock or
 * serialization failure), itself or as the cause of an error that wraps it.
 */
export const isLockConflict = (error: unknown): boolean => {
  let e = error
  for (let depth = 0; depth < 5 && e !== undefined && e !== null; depth++) {
    if (e instanceof SqlError.SqlError) return e.reason._tag === "DeadlockError" || e.reason._tag === "SerializationError"
    e = (e as { readonly cause?: unknown }).cause
  }
  return false
}

/** A lock conflict that reached the transaction as a defect, carried as a failure while it is retried. */
class ConflictDefect {
  constructor(readonly defect: unknown) {}
}

/** Runs `transaction` (a whole transaction of its own) again, up to 4 more times, when it lost a lock conflict. */
export const retryLockConflicts = <A, E, R>(transaction: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  transaction.pipe(
    Effect.catchDefect((defect) => isLockConflict(defect) ? Effect.fail(new ConflictDefect(defect)) : Effect.die(defect)),
    Effect.tapError((e: E | ConflictDefect) =>
      e instanceof ConflictDefect || isLockConflict(e)
        ? Effect.logInfo("a transaction lost a lock conflict (deadlock or serialization failure); it runs again")
        : Effect.void
    ),
    Effect.retry({
      while: (e: E | ConflictDefect) => e instanceof ConflictDefect || isLockConflict(e),
      times: 4,
      schedule: Schedule.jittered(Schedule.exponential("10 millis"))
    }),
    Effect.catch((e: E | ConflictDefect) => e instanceof ConflictDefect ? Effect.die(e.defect) : Effect.fail(e))
  )

/**
 * `sql.withTransaction(body)`: a transaction of its own is run again when it lost a lock
 * conflict; inside a caller's transaction it is the usual savepoint (the caller decides).
 */
export const transactionRetryingConflicts = (sql: SqlClient.SqlClient) =>
<A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
  Effect.flatMap(Effect.serviceOption(sql.transactionService), (outer) =>
    Option.isNone(outer) ? retryLockConflicts(sql.withTransaction(body)) : sql.withTransaction(body))
