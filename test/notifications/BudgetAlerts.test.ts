/**
 * Budget alerts end to end on the local network: the owner gets one warning when the
 * delegation's budget passes 80 % and one when it reaches 100 %, related to the delegation;
 * never twice (a replayed settlement is refused by the unique key); the delegate gets none.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeBudgetAlerts } from "../../src/notifications/BudgetAlerts.ts"
import { Notifications } from "../../src/notifications/Notifications.ts"
import { TokenRegistry } from "../../src/tokens/TokenRegistry.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { enabled, newSession, relay, signOp } from "../delegations/helpers.ts"

process.env.DO_NOT_TRACK = "1"

const budgetNotes = <N extends { readonly title: string }>(notes: ReadonlyArray<N>) => notes.filter((n) => n.title.startsWith("Budget"))

layer(TestServerLive(), { timeout: Duration.seconds(90), excludeTestServices: true })("budget alerts", (it) => {
  it.effect("80 % and 100 %: one alert each, to the owner, related to the delegation; exactly once", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address
      yield* mint("usd", owner.account.address as Hex, 20)
      const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 10, maxActions: 5 })
      const act = (amount: number) =>
        Effect.gen(function*() {
          const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount } })
          const receipt = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
          assert.strictEqual(receipt.outcome, "mined")
        })
      const ownerNotes = Effect.map(owner.api.notifications.list({ query: { unreadOnly: false } }), budgetNotes)

      yield* act(5) // 50 %
      assert.deepStrictEqual(yield* ownerNotes, [])
      yield* act(3) // 80 % exactly: passes the 80 % mark
      const at80 = yield* ownerNotes
      assert.strictEqual(at80.length, 1)
      assert.strictEqual(at80[0]!.title, "Budget 80% used")
      assert.strictEqual(at80[0]!.tone, "warning")
      assert.strictEqual(at80[0]!.relatedType, "delegation")
      assert.strictEqual(at80[0]!.relatedId, created.id)
      assert.include(at80[0]!.body, "8 of 10 USDC")
      yield* act(1) // 90 %: nothing new
      assert.strictEqual((yield* ownerNotes).length, 1)
      yield* act(1) // 100 %
      const at100 = yield* ownerNotes
      assert.deepStrictEqual(at100.map((n) => n.title), ["Budget used up", "Budget 80% used"])
      assert.strictEqual(at100[0]!.tone, "danger")
      assert.strictEqual(at100[0]!.relatedId, created.id)
      assert.deepStrictEqual(budgetNotes(yield* delegate.api.notifications.list({ query: { unreadOnly: false } })), [])

      // Settlements replayed concurrently (as racing processes would): still one alert each.
      const sql = yield* SqlClient.SqlClient
      const reservations = yield* sql<{ id: string }>`
        SELECT id FROM delegation_reservations WHERE delegation_id = ${created.id} AND status = 'final'`
      const alerts = yield* makeBudgetAlerts.pipe(
        Effect.provide(Notifications.layer),
        Effect.provide(TokenRegistry.layer)
      )
      yield* Effect.forEach([...reservations, ...reservations], (r) => sql.withTransaction(alerts.afterSpend(r.id)), {
        concurrency: "unbounded"
      })
      assert.strictEqual((yield* ownerNotes).length, 2)
      const rows = yield* sql<{ threshold: number; notification_id: string }>`
        SELECT threshold, notification_id FROM budget_alerts WHERE delegation_id = ${created.id} ORDER BY threshold`
      assert.deepStrictEqual(rows.map((r) => [r.threshold, r.notification_id]), [[80, at80[0]!.id], [100, at100[0]!.id]])
    }))
})
