/**
 * `retryLockConflicts` against a real deadlock: two transactions take two rows in opposite
 * orders, each holding its first before asking for its second, so PostgreSQL must fail
 * one of them (`40P01`). Unwrapped, one fails with a lock conflict; wrapped, the victim
 * runs again after the winner commits and both land. Also when the statement's error
 * reaches the transaction as a defect (a service's `Effect.orDie`, as the audit recorder
 * and the hooks do), which is how a settlement met it under the full suite's load.
 */
import { assert, layer } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { isLockConflict, retryLockConflicts } from "../../src/db/Conflicts.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"

/** Both transactions, each holding its first row when the other asks for it. */
const crossing = (retry: boolean, dies = false) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = `conflict_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`
    yield* sql`CREATE TABLE ${sql(table)} (id text PRIMARY KEY, n integer NOT NULL)`
    yield* sql`INSERT INTO ${sql(table)} (id, n) VALUES ('a', 0), ('b', 0)`
    const held = { a: yield* Deferred.make<void>(), b: yield* Deferred.make<void>() }
    const bump = (id: string): Effect.Effect<unknown, unknown> => {
      const statement = sql`UPDATE ${sql(table)} SET n = n + 1 WHERE id = ${id}`
      return dies ? Effect.orDie(statement) : statement
    }
    const transaction = (first: "a" | "b", second: "a" | "b") =>
      sql.withTransaction(Effect.gen(function*() {
        yield* bump(first)
        yield* Deferred.succeed(held[first], undefined)
        yield* Deferred.await(held[second])
        yield* bump(second)
      }))
    const run = (t: Effect.Effect<void, unknown>) => Effect.exit(retry ? retryLockConflicts(t) : t)
    const exits = yield* Effect.all([run(transaction("a", "b")), run(transaction("b", "a"))], { concurrency: 2 })
    const rows = yield* sql<{ id: string; n: number }>`SELECT id, n FROM ${sql(table)} ORDER BY id`
    return { exits, counts: rows.map((r) => r.n) }
  }).pipe(Effect.orDie)

layer(TestDatabaseLive({ maxConnections: 4 }), { excludeTestServices: true })("lock conflicts", (it) => {
  it.effect("a deadlock fails one transaction; retried, both land once", () =>
    Effect.gen(function*() {
      const bare = yield* crossing(false)
      const failed = bare.exits.filter(Exit.isFailure)
      assert.strictEqual(failed.length, 1, "PostgreSQL fails exactly one of two crossing transactions")
      const error = Exit.findErrorOption(failed[0]!)
      assert.isTrue(error._tag === "Some" && isLockConflict(error.value), "it is a lock conflict")
      assert.deepStrictEqual(bare.counts, [1, 1], "the victim rolled back whole")

      const retried = yield* crossing(true)
      assert.isTrue(retried.exits.every(Exit.isSuccess))
      assert.deepStrictEqual(retried.counts, [2, 2], "both transactions landed, each once")
    }), 30_000)

  it.effect("a deadlock a service turned into a defect is retried the same way", () =>
    Effect.gen(function*() {
      const bare = yield* crossing(false, true)
      const died = bare.exits.filter(Exit.isFailure)
      assert.strictEqual(died.length, 1)
      const defect = Cause.findDefect(died[0]!.cause)
      assert.isTrue(defect._tag === "Success" && isLockConflict(defect.success), "a defect carrying the lock conflict")

      const retried = yield* crossing(true, true)
      assert.isTrue(retried.exits.every(Exit.isSuccess))
      assert.deepStrictEqual(retried.counts, [2, 2])
      // Any other defect is not retried: it comes out as it went in, once.
      let runs = 0
      const other = yield* Effect.exit(retryLockConflicts(Effect.suspend(() => {
        runs++
        return Effect.die(new Error("a bug"))
      })))
      assert.strictEqual(runs, 1)
      const bug = Exit.isFailure(other) ? Cause.findDefect(other.cause) : undefined
      assert.isTrue(bug?._tag === "Success" && (bug.success as Error).message === "a bug")
    }), 30_000)
})
