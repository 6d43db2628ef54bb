/**
 * A re-send the bundler refuses is checked against the receipt before it is settled
 * `rejected`; when that receipt cannot be read (the bundler is flaky), nothing is known
 * and the operation must stay `submitted`: it may well have executed (here it did).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { testNetwork } from "../support/TestChain.ts"
import { bundlerProxy } from "./bundlerProxy.ts"
import { auditEntriesOf, bundled, serviceWithFreeze } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("relay re-send", () => {
  it.live("a refused re-send while the bundler denies knowing the operation is settled from the chain, never rejected", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const { context, api, signed } = yield* serviceWithFreeze({
        config: {
          RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds", // only the test's polls reconcile
          RELAY_RESEND_AFTER: "1 second",
          RELAY_SEND_LEASE: "1 second",
          BUNDLER_RETRIES: "0",
          BUNDLER_TIMEOUT: "3 seconds"
        },
        chain: { bundlerUrl: proxy.url }
      })
      const submitted = yield* api.userops.submit({ payload: signed })
      assert.strictEqual(submitted.status, "submitted")
      // Included on chain, not yet settled by the service (nobody polled).
      yield* bundled(context, submitted.userOpHash)
      yield* Effect.sleep(Duration.millis(1200)) // due for a re-send

      // The bundler claims not to know it, refuses the re-send (its nonce is used), then cannot be reached:
      // the chain shows it executed (the relay's refusal check or the follower reads it), so it is included.
      proxy.setMode("receipt-null-then-down")
      const during = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} })
      assert.notStrictEqual(during.status, "failed")
      assert.notStrictEqual(during.outcome, "rejected")

      proxy.setMode("up")
      const after = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} })
      assert.strictEqual(after.status, "included")
      assert.strictEqual(after.outcome, "mined")
      assert.isTrue((yield* api.accounts.getRules({ query: {} })).frozen)
      const entries = yield* auditEntriesOf(submitted.userOpId).pipe(
        Effect.provideService(SqlClient.SqlClient, Context.get(context, SqlClient.SqlClient))
      )
      assert.deepStrictEqual(entries.map((e) => e.status), ["executed"])
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("the sent mark lost after the bundler's answer (a killed process): no re-send while the lease holds, then one, settled once", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const { sql, api, signed } = yield* serviceWithFreeze({
        config: {
          RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds", // only the test's polls reconcile
          RELAY_SEND_LEASE: "2 seconds",
          FOLLOWER_INTERVAL: "0 seconds", // the relay alone must get it right
          BUNDLER_RETRIES: "0"
        },
        chain: { bundlerUrl: proxy.url }
      })
      const submitted = yield* api.userops.submit({ payload: signed })
      const row = sql<{ sent_at: Date | null; send_attempts: number; status: string }>`
        SELECT sent_at, send_attempts, status FROM user_operations WHERE id = ${submitted.userOpId}`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie
      )
      // The mark lands after the answer; then the test takes it back, as if the process had died
      // before writing it: unsent, the first send's lease still held.
      yield* row.pipe(
        Effect.flatMap((r) => (r.sent_at !== null ? Effect.void : Effect.fail("not yet"))),
        Effect.retry(Schedule.spaced(Duration.millis(50))),
        Effect.timeout(Duration.seconds(10)),
        Effect.orDie
      )
      yield* sql`UPDATE user_operations SET sent_at = NULL, send_lease_until = now() + interval '2 seconds'
                 WHERE id = ${submitted.userOpId}`.pipe(Effect.orDie)
      // The bundler denies knowing it (no receipt): only a send could settle it now.
      proxy.setMode("receipt-null")
      const during = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} })
      assert.strictEqual(during.status, "submitted")
      assert.strictEqual((yield* row).send_attempts, 1, "nothing is re-sent while the lease holds")

      yield* Effect.sleep(Duration.millis(2200)) // the lease runs out
      const after = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} })
      assert.strictEqual((yield* row).send_attempts, 2, "sent again once")
      // The re-send is refused (its nonce is used); the chain shows it executed.
      assert.strictEqual(after.status, "included")
      assert.strictEqual(after.outcome, "mined")
      assert.deepStrictEqual(
        (yield* auditEntriesOf(submitted.userOpId).pipe(Effect.provideService(SqlClient.SqlClient, sql))).map((e) => e.status),
        ["executed"]
      )
      assert.isTrue((yield* api.accounts.getRules({ query: {} })).frozen)
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
