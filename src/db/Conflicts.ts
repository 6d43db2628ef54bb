/**
 * Lock conflicts between transactions: PostgreSQL breaks a deadlock by failing one of the
 * transactions in it (`40P01`), and a serializable or repeatable-read transaction can fail
 * on a concurrent update (`40001`). Either way the failed transaction rolled back whole, so
 * running it again is safe and is what the database expects of its client. Two writers
 * that take the same rows in different orders (a settlement locking a delegation, then the
 * owner's audit head; the chain follower the other way round) meet this under load.
 *
 * Only a transaction of its own may be retried: inside a caller's transaction the failed
 * statement has aborted the caller's work too, and the caller decides.
 */
import { Effect, Schedule } from "effect"
import { SqlError } from "effect/sql"

/** Whether `error` is a lock conflict that rolled its transaction back (deadlock or serialization failure). */
export const isLockConflict = (error: unknown): boolean =>
  error instanceof SqlError.SqlError && (error.reason._tag === "DeadlockError" || error.reason._tag === "SerializationError")

/** Runs `transaction` (a whole transaction of its own) again, up to 4 more times, when it lost a lock conflict. */
export const retryLockConflicts = <A, E, R>(transaction: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(transaction, {
    while: isLockConflict,
    times: 4,
    schedule: Schedule.jittered(Schedule.exponential("10 millis"))
  })
