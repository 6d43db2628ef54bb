/**
 * Reservations bound to their operation (issue 11, "The relay can lose a spend"): a copy
 * of an action with other signed fields cannot free the real operation's reservation;
 * identical action requests are one build and one reservation; an operation that uses a
 * (sender, nonce) frees the reservations of every other build at that nonce at once.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { enabled, failure, newSession, relay, signOp, usdcBalance } from "../delegations/helpers.ts"

process.env.DO_NOT_TRACK = "1"

const statuses = (delegationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ status: string }>`
      SELECT status FROM delegation_reservations WHERE delegation_id = ${delegationId} ORDER BY created_at`
    return rows.map((r) => r.status)
  })

/** A fresh owner holding `budget` USDC, its grant to a fresh delegate (enabled on chain), and a fresh recipient. */
const granted = (limits: { readonly budget: number; readonly perAction: number; readonly maxActions: number }) =>
  Effect.gen(function*() {
    const owner = yield* newSession()
    const delegate = yield* newSession()
    const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
    yield* mint("usd", owner.account.address as Hex, limits.budget)
    const { created } = yield* enabled(owner, delegate, limits)
    return { owner, delegate, recipient, created }
  })

layer(TestServerLive(), { timeout: Duration.seconds(90), excludeTestServices: true })("reservations at the relay", (it) => {
  it.effect("a copy of an action with other signed fields cannot free the real operation's reservation", () =>
    Effect.gen(function*() {
      const { owner, delegate, recipient, created } = yield* granted({ budget: 30, perAction: 25, maxActions: 5 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 21 } })
      const real = yield* signOp(delegate.key, action.userOp)
      const submitted = yield* delegate.api.userops.submit({ payload: real })
      // The delegate's copy with a higher fee, correctly signed by its own key: not what was built.
      const copy = yield* signOp(delegate.key, {
        ...action.userOp,
        maxPriorityFeePerGas: (BigInt(action.userOp.maxPriorityFeePerGas) + 1n).toString()
      })
      const refused = yield* failure(delegate.api.userops.submit({ payload: copy }))
      assert.strictEqual(refused.tag, "BadRequest")
      const mined = yield* relay(delegate.api, real)
      assert.strictEqual(mined.userOpId, submitted.userOpId)
      assert.strictEqual(mined.status, "included")
      assert.strictEqual(yield* usdcBalance(recipient), 21_000_000n)
      assert.deepStrictEqual(yield* statuses(created.id), ["final"])
      const after = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.deepStrictEqual(after.spentToDate.map((s) => [s.spent, s.remaining]), [[21, 9]])
    }))

  it.effect("an action first sent with a bad signature (refused) still goes through when correctly signed", () =>
    Effect.gen(function*() {
      const { owner, delegate, recipient, created } = yield* granted({ budget: 10, perAction: 5, maxActions: 1 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 5 } })
      const forged = yield* relay(delegate.api, yield* signOp(generatePrivateKey(), action.userOp))
      assert.deepStrictEqual([forged.status, forged.outcome], ["failed", "rejected"])
      const mined = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.notStrictEqual(mined.userOpId, forged.userOpId)
      assert.deepStrictEqual([mined.status, mined.outcome], ["included", "mined"])
      assert.strictEqual(yield* usdcBalance(recipient), 5_000_000n)
      assert.deepStrictEqual(yield* statuses(created.id), ["final"])
      // The one action is used: another is declined.
      const more = yield* failure(owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 1 } }))
      assert.strictEqual(more.reason, "count_exhausted")
    }))

  it.effect("identical action requests are one build and one reservation; another build at the same nonce is freed when one executes", () =>
    Effect.gen(function*() {
      const { owner, delegate, recipient, created } = yield* granted({ budget: 30, perAction: 10, maxActions: 5 })
      const other = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      const act = (to: string) =>
        owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient: to, amount: 10 } })
      const first = yield* act(recipient)
      const again = yield* Effect.forEach([1, 2, 3], () => act(recipient), { concurrency: "unbounded" })
      for (const b of again) {
        assert.strictEqual(b.buildId, first.buildId)
        assert.strictEqual(b.userOpHash, first.userOpHash)
      }
      assert.deepStrictEqual(yield* statuses(created.id), ["reserved"])
      // A different action at the same nonce holds its own reservation...
      const second = yield* act(other)
      assert.notStrictEqual(second.userOpHash, first.userOpHash)
      assert.strictEqual(second.userOp.nonce, first.userOp.nonce)
      assert.deepStrictEqual(yield* statuses(created.id), ["reserved", "reserved"])
      // ...until the first executes: the nonce is used, the second can never run, its 10 USDC are free again.
      const mined = yield* relay(delegate.api, yield* signOp(delegate.key, first.userOp))
      assert.strictEqual(mined.status, "included")
      assert.deepStrictEqual(yield* statuses(created.id), ["final", "released"])
      const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.deepStrictEqual(view.spentToDate.map((s) => [s.spent, s.remaining]), [[10, 20]])
      // Two more actions fit: the freed reservation does not hold the budget.
      yield* act(other)
      yield* act(privateKeyToAccount(generatePrivateKey()).address)
    }))

  it.effect("100 identical concurrent action requests: one reservation per distinct build, all freed but the executed one at once", () =>
    Effect.gen(function*() {
      const { owner, delegate, recipient, created } = yield* granted({ budget: 100, perAction: 3, maxActions: 100 })
      const builds = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i),
        () => owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 3 } }),
        { concurrency: "unbounded" }
      )
      const distinct = new Set(builds.map((b) => b.buildId))
      const held = (yield* statuses(created.id)).filter((s) => s !== "released").length
      assert.strictEqual(held, distinct.size, "one reservation per distinct build answered")
      const mined = yield* relay(delegate.api, yield* signOp(delegate.key, builds[0]!.userOp))
      assert.strictEqual(mined.status, "included")
      const after = yield* statuses(created.id)
      assert.deepStrictEqual(after.filter((s) => s !== "released"), ["final"])
      const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.deepStrictEqual(view.spentToDate.map((s) => [s.spent, s.remaining]), [[3, 97]])
    }))

  it.effect("identical requests at once where the budget holds one action: every request answered the same build", () =>
    Effect.gen(function*() {
      // Before identical requests in one process were one run, each held a reservation until
      // the builds met on their share key: with room for one, the others were declined for it.
      const { owner, recipient, created } = yield* granted({ budget: 3, perAction: 3, maxActions: 5 })
      const answers = yield* Effect.forEach(
        Array.from({ length: 30 }, (_, i) => i),
        () => owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 3 } }).pipe(
          Effect.map((b) => b.buildId),
          Effect.catch((e) => Effect.succeed(`${e._tag}: ${e.message}`))
        ),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual([...new Set(answers)].length, 1, `one answer: ${[...new Set(answers)].join(" | ")}`)
      assert.match(answers[0]!, /^[^:]+$/, "a build, not an error")
      assert.deepStrictEqual(yield* statuses(created.id), ["reserved"], "one reservation")
      // A different action (another amount) is a request of its own: over the budget now.
      const other = yield* failure(owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 1 } }))
      assert.strictEqual(other.tag, "OutOfScope")
    }))
})
