import { Deferred, Effect, Fiber, Schedule } from "effect"
import type { SqlClient } from "effect/sql"
import { GENESIS_HASH } from "../../src/audit/Chain.ts"

/**
 * Run inside a transaction: waits (up to `seconds`) until another backend waits for a lock this
 * one holds, and fails with "`who` never waited" otherwise. pg_stat_activity stays as first
 * read within a transaction unless its snapshot is cleared, so each poll clears it.
 */
export const awaitWaiter = (sql: SqlClient.SqlClient, who: string, seconds = 20) =>
  Effect.gen(function*() {
    yield* sql`SELECT pg_stat_clear_snapshot()`
    const [row] = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`
    return row!.n > 0
  }).pipe(
    Effect.repeat({ until: (waiting) => waiting, schedule: Schedule.spaced("50 millis"), times: seconds * 20 }),
    Effect.filterOrFail((waiting) => waiting, () => new Error(`${who} never waited`))
  )

/** The account's audit head as its first append would create it, so that a test can hold it. */
export const ensureAuditHead = (sql: SqlClient.SqlClient, accountId: string) =>
  sql`INSERT INTO audit_heads (account_id, length, head_hash, executed_count)
      VALUES (${accountId}, 0, ${GENESIS_HASH}, 0) ON CONFLICT DO NOTHING`.pipe(Effect.orDie)

/** Holds `lock` in a transaction of its own until the returned release runs. */
export const holding = (sql: SqlClient.SqlClient, lock: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const held = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const fiber = yield* Effect.forkChild(sql.withTransaction(
      Effect.andThen(lock, Effect.andThen(Deferred.succeed(held, undefined), Deferred.await(release)))
    ).pipe(Effect.orDie))
    yield* Deferred.await(held)
    return Deferred.succeed(release, undefined).pipe(Effect.andThen(Fiber.join(fiber)))
  })
