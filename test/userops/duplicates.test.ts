/**
 * Exactly once at submit, attacked: the same signed operation submitted many times at once,
 * and submitted again after the bundler took it but its answer was lost. One row, one send
 * reaching the bundler from the submits, every answer the stored operation, one audit entry.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { testNetwork } from "../support/TestChain.ts"
import { bundlerProxy, type ProxyMode } from "./bundlerProxy.ts"
import { auditEntriesOf, serviceWithFreeze, settle } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

/** A service whose bundler is behind a switchable proxy, a fresh signer's session and its signed freeze. */
const setup = (mode: ProxyMode) =>
  Effect.gen(function*() {
    const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, mode)
    const { sql, api, build, signed } = yield* serviceWithFreeze({
      config: {
        RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds", // only the test's polls reconcile
        BUNDLER_RETRIES: "0"
      },
      chain: { bundlerUrl: proxy.url }
    })
    const rowsOf = sql<{ id: string; status: string }>`
      SELECT id, status FROM user_operations WHERE user_op_hash = ${build.userOpHash}`.pipe(Effect.orDie)
    const entriesOf = (id: string) => auditEntriesOf(id).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    return { proxy, api, signed, rowsOf, entriesOf }
  })

describe("relay: exactly once at submit", () => {
  it.live("20 identical submits at once: one row, one send to the bundler, every answer the same operation, settled once", () =>
    Effect.gen(function*() {
      const { proxy, api, signed, rowsOf, entriesOf } = yield* setup("up")
      const answers = yield* Effect.all(
        Array.from({ length: 20 }, () =>
          api.userops.submit({ payload: signed }).pipe(
            Effect.map((r) => ({ tag: "Receipt", userOpId: r.userOpId, status: r.status as string })),
            Effect.catch((e) => Effect.succeed({ tag: (e as { _tag: string })._tag, userOpId: "", status: "" }))
          )),
        { concurrency: "unbounded" }
      )
      const rows = yield* rowsOf
      assert.strictEqual(rows.length, 1, "one row")
      assert.deepStrictEqual([...new Set(answers.map((a) => a.tag))], ["Receipt"], "no error, no 500")
      assert.deepStrictEqual([...new Set(answers.map((a) => a.userOpId))], [rows[0]!.id], "every answer is the stored operation")
      assert.isTrue(answers.every((a) => a.status === "submitted" || a.status === "included"))
      assert.strictEqual(proxy.forwardedSends(), 1, "one send reached the bundler")
      assert.strictEqual((yield* settle(api, rows[0]!.id)).status, "included")
      // Submitted again once settled: the stored outcome, nothing sent.
      const again = yield* api.userops.submit({ payload: signed })
      assert.strictEqual(again.userOpId, rows[0]!.id)
      assert.strictEqual(again.status, "included")
      assert.strictEqual(proxy.forwardedSends(), 1)
      assert.deepStrictEqual((yield* entriesOf(rows[0]!.id)).map((e) => e.status), ["executed"])
    }).pipe(Effect.scoped), { timeout: 60_000 })

  it.live("the bundler took it but its answer was lost: 503 with the stored id; the same submit again answers it without sending", () =>
    Effect.gen(function*() {
      const { proxy, api, signed, rowsOf, entriesOf } = yield* setup("lose-send-answer")
      const lost = yield* api.userops.submit({ payload: signed }).pipe(Effect.flip)
      assert.strictEqual(lost._tag, "ServiceUnavailable")
      const details = (lost as { details?: { userOpId?: string; status?: string; chainId?: number } }).details
      assert.strictEqual(details?.chainId, 31337)
      const rows = yield* rowsOf
      assert.strictEqual(rows.length, 1)
      assert.strictEqual(details?.userOpId, rows[0]!.id)
      assert.strictEqual(details?.status, "submitted")
      assert.strictEqual(proxy.forwardedSends(), 1, "the bundler has it")
      // The client retries (it never saw an answer), several times at once: the stored operation, no new send.
      const retries = yield* Effect.all(
        Array.from({ length: 5 }, () => api.userops.submit({ payload: signed })),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual([...new Set(retries.map((r) => r.userOpId))], [rows[0]!.id])
      assert.strictEqual(proxy.forwardedSends(), 1, "a duplicate submit never sends")
      assert.strictEqual((yield* rowsOf).length, 1)
      // Settled from the bundler's receipt (the reconciler re-sends an unsent operation only if there is none yet).
      proxy.setMode("up")
      assert.strictEqual((yield* settle(api, rows[0]!.id)).status, "included")
      assert.deepStrictEqual((yield* entriesOf(rows[0]!.id)).map((e) => e.status), ["executed"])
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
