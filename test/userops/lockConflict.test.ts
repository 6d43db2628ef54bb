/**
 * A settlement that loses a deadlock is run again, never answered 500. Under the full
 * suite's load a settlement met another writer taking the same rows in the other order,
 * PostgreSQL failed it (`40P01`) inside the audit recorder, which turns database errors
 * into defects, and `GET /userops/:id` answered 500. Here the deadlock is made on purpose:
 * a transaction holds the account's audit head, the poll's settlement moves the operation's
 * row and its audit append waits for the head, and the transaction then asks for the
 * operation's row.
 * The settlement waited first, and the crossing transaction's own deadlock check is put off (30 s),
 * so the settlement's check (a second into its wait) is the one that finds the cycle: PostgreSQL
 * fails the settlement, whatever the machine's load.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { awaitWaiter, ensureAuditHead } from "../support/locks.ts"
import { auditEntriesOf, bundled, serviceWithFreeze } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("relay: lock conflicts", () => {
  it.live("a settlement that loses a deadlock runs again: the poll answers the operation, settled once", () =>
    Effect.gen(function*() {
      // The account's first operation: its settlement moves the operation's row, the account's (deployed, frozen), then appends.
      const { context, sql, accountId, api, signed } = yield* serviceWithFreeze({
        // Only the test's poll settles: no reconciler pass, no follower.
        config: { RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds", FOLLOWER_INTERVAL: "0 seconds" }
      })
      const submitted = yield* api.userops.submit({ payload: signed })
      assert.strictEqual(submitted.status, "submitted")
      yield* bundled(context, submitted.userOpHash)
      const deadlocksBefore = yield* deadlocks(sql)

      yield* ensureAuditHead(sql, accountId)
      const headHeld = yield* Deferred.make<void>()
      const crossing = sql.withTransaction(Effect.gen(function*() {
        // The settlement must be the one that finds the cycle: its check runs a second into its wait
        // (the server's deadlock_timeout). This transaction's own check is put off far past that, so a
        // busy machine that runs the settlement's check late cannot make this one the victim instead.
        yield* sql`SET LOCAL deadlock_timeout = '30s'`
        yield* sql`SELECT account_id FROM audit_heads WHERE account_id = ${accountId} FOR UPDATE`
        yield* Deferred.succeed(headHeld, undefined)
        // Someone (the settlement's audit append) waits for the head it holds.
        yield* awaitWaiter(sql, "the settlement (for the audit head)")
        yield* sql`SELECT id FROM user_operations WHERE id = ${submitted.userOpId} FOR UPDATE`
      }))
      const other = yield* Effect.forkChild(Effect.exit(crossing))
      yield* Deferred.await(headHeld)
      const polled = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} }).pipe(Effect.exit)
      const otherExit = yield* Fiber.join(other)

      assert.isTrue(Exit.isSuccess(otherExit), `the crossing transaction went through: ${Exit.isFailure(otherExit) ? String(otherExit.cause) : ""}`)
      // Each backend reports its statistics when it goes idle, within a second or so.
      const broken = yield* deadlocks(sql).pipe(
        Effect.repeat({ until: (n) => n > deadlocksBefore, schedule: Schedule.spaced("100 millis"), times: 50 })
      )
      assert.strictEqual(broken - deadlocksBefore, 1, "PostgreSQL broke one deadlock")
      assert.isTrue(Exit.isSuccess(polled), `the poll answered the operation, not ${Exit.isFailure(polled) ? String(polled.cause) : ""}`)
      if (Exit.isSuccess(polled)) assert.strictEqual(polled.value.status, "included")
      const entries = yield* auditEntriesOf(submitted.userOpId).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      assert.deepStrictEqual(entries.map((e) => e.status), ["executed"], "one audit entry")
      const [account] = yield* sql<{ frozen: boolean; deployment_status: string }>`
        SELECT frozen, deployment_status FROM accounts WHERE id = ${accountId}`
      assert.deepStrictEqual({ ...account }, { frozen: true, deployment_status: "deployed" }, "its effects applied once")
    }).pipe(Effect.scoped), { timeout: 60_000 })
})

const deadlocks = (sql: SqlClient.SqlClient) =>
  sql<{ n: number }>`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`.pipe(
    Effect.map((rows) => rows[0]!.n),
    Effect.orDie
  )
