/**
 * Time on the local network through HTTP: a delegation past `expiresAt` reads `expired`
 * and declines actions (`expired`, audit event, notification), at the action build and
 * at the relay; a reservation that expired before its operation was relayed is re-checked
 * at submit and declined (422) when the budget no longer holds it. Short clocks:
 * `DELEGATION_MIN_LIFETIME` = 1 second, `DELEGATION_RESERVATION_TTL` = 2 seconds.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { type Api, enabled, failure, newSession, relay, signOp, usdcBalance } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const RESERVATION_TTL_MS = 2_000
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase()

/** The declined audit event behind a 422 (action build: `details.auditEventId`; relay: the operation's). */
const declinedEvent = (api: Api, eventId: string, reason: string) =>
  Effect.gen(function*() {
    const event = yield* api.activity.get({ params: { eventId } })
    assert.deepStrictEqual([event.status, event.declineReason], ["declined", reason])
    const notes = yield* api.notifications.list({ query: { unreadOnly: false } })
    assert.isTrue(notes.some((n) => n.tone === "danger" && n.relatedId === event.id), "a danger notification links to it")
  })

const reservations = (delegationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ status: string }>`SELECT status FROM delegation_reservations WHERE delegation_id = ${delegationId} ORDER BY created_at`.pipe(
      Effect.map((rows) => rows.map((r) => r.status))
    ))

layer(
  TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second", DELEGATION_RESERVATION_TTL: `${RESERVATION_TTL_MS} millis` } }),
  { timeout: Duration.seconds(60), excludeTestServices: true }
)("expiry", (it) => {
  it.effect("past expiresAt: reads expired, actions declined `expired` at build and at the relay, nothing spent", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 10)
      const expiresAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 6_000)
      const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 5, maxActions: 3, expiresAt: expiresAt.toISOString() })
      const id = created.id
      assert.strictEqual(created.policySet.expiresAt, expiresAt.toISOString())
      // Built while valid, relayed after expiry.
      const action = yield* owner.api.delegations.act({ params: { delegationId: id }, payload: { recipient, amount: 1 } })
      const signed = yield* signOp(delegate.key, action.userOp)

      yield* Effect.sleep(Duration.millis(Math.max(0, expiresAt.getTime() - Date.now()) + 300))
      const read = yield* owner.api.delegations.get({ params: { delegationId: id } })
      assert.strictEqual(read.status, "expired")
      assert.deepStrictEqual((yield* owner.api.delegations.list({ query: { status: "expired" } })).map((d) => d.id), [id])
      assert.deepStrictEqual(yield* owner.api.delegations.list({ query: { status: "active" } }), [])

      const atBuild = yield* failure(owner.api.delegations.act({ params: { delegationId: id }, payload: { recipient, amount: 1 } }))
      assert.deepStrictEqual([atBuild.tag, atBuild.reason], ["OutOfScope", "expired"])
      yield* declinedEvent(owner.api, atBuild.details["auditEventId"] as string, "expired")

      const atRelay = yield* failure(delegate.api.userops.submit({ payload: signed }))
      assert.deepStrictEqual([atRelay.tag, atRelay.reason], ["OutOfScope", "expired"])
      const stored = yield* delegate.api.userops.get({ params: { userOpId: atRelay.details["userOpId"] as string }, query: {} })
      assert.deepStrictEqual([stored.status, stored.outcome], ["failed", "rejected"])
      yield* declinedEvent(delegate.api, stored.auditEventId!, "expired")

      const after = yield* owner.api.delegations.get({ params: { delegationId: id } })
      assert.deepStrictEqual(after.spentToDate.map((s) => [s.spent, s.remaining]), [[0, 10]])
      assert.deepStrictEqual(yield* reservations(id), ["released"])
      assert.strictEqual(yield* usdcBalance(recipient), 0n)
    }))

  it.effect("a reservation that expired before its relay is re-checked: 422 `cap_exceeded` when the budget went to another", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const first = randomAddress()
      const second = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 20)
      const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 10, maxActions: 5 })
      const id = created.id
      const act = (recipient: string) =>
        owner.api.delegations.act({ params: { delegationId: id }, payload: { recipient, amount: 10 } })

      const stale = yield* signOp(delegate.key, (yield* act(first)).userOp)
      // While its reservation holds, the budget is taken.
      assert.strictEqual((yield* failure(act(second))).reason, "cap_exceeded")
      yield* Effect.sleep(Duration.millis(RESERVATION_TTL_MS + 300))
      // Expired: the budget is free for another action, which executes.
      const fresh = yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act(second)).userOp))
      assert.strictEqual(fresh.outcome, "mined")

      const declined = yield* failure(delegate.api.userops.submit({ payload: stale }))
      assert.deepStrictEqual([declined.tag, declined.reason], ["OutOfScope", "cap_exceeded"])
      const stored = yield* delegate.api.userops.get({ params: { userOpId: declined.details["userOpId"] as string }, query: {} })
      assert.strictEqual(stored.reason, "declined: cap_exceeded")
      yield* declinedEvent(delegate.api, stored.auditEventId!, "cap_exceeded")

      const after = yield* owner.api.delegations.get({ params: { delegationId: id } })
      assert.deepStrictEqual(after.spentToDate.map((s) => [s.spent, s.remaining]), [[10, 0]])
      assert.deepStrictEqual(yield* reservations(id), ["released", "final"])
      assert.strictEqual(yield* usdcBalance(first), 0n)
      assert.strictEqual(yield* usdcBalance(second), 10_000_000n)
    }))
})
