/**
 * Asking for more (issue 25, item 3): the agent asks its owner to change its grant; the owner
 * reads the difference, builds the ONE replacement operation, signs and accepts it. Around the
 * service the chain proves the spend carried over: the old grant is disabled, the new one cannot
 * move more than the new total less what the old one spent, and a replacement built before the
 * old grant was redeemed again is refused whole (SpendGuard). Races: two accepts at once enable
 * once; a revoke that lands first makes the accept fail and the request expire. Bad input: 400s
 * naming the field, nothing stored.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { Network } from "../../src/chain/Network.ts"
import type { DelegationBuild } from "../../src/delegations/Domain.ts"
import { balances, grant, makeAttacker, redeemCall, refused, succeeds, transfer, withArgs } from "../delegations/attacker.ts"
import { failure, newSession, relay, type Session, signLeg, signOp } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { eventually, randomAddress, USD } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

/** The owner signs the replacement's operation and delegation: the accept's payload, and the new grant as the delegate holds it. */
const signed = (owner: Session, build: typeof DelegationBuild.Type) =>
  Effect.gen(function*() {
    const leg = build.delegations[0]!
    const signature = yield* signLeg(owner.key, leg.typedData)
    return {
      payload: {
        userOp: yield* signOp(owner.key, build.enableUserOp),
        userOpHash: build.userOpHash,
        delegationSignatures: [{ permissionId: leg.permissionId, signature }]
      },
      grant: { ...leg.delegation, signature } as unknown as Delegation
    }
  })

const usdcGrant = (owner: Session, delegate: Session, budget: number, perActionMax = budget) =>
  grant(owner, delegate, {
    budgets: [{ token: { symbol: "USDC" }, amount: budget }],
    perActionMax: { token: { symbol: "USDC" }, amount: perActionMax },
    maxActions: 5
  })

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("asking for more", (it) => {
  it.effect("the agent asks, the owner sees the difference and accepts with one operation; the chain holds the new total of the whole", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate, stranger] = yield* Effect.all([newSession(), newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* usdcGrant(owner, delegate, 10)
      const spend = yield* delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 6 } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, spend.userOp))).outcome, "mined")

      // Bad input: a 400 naming the field, nothing stored.
      const ask = (payload: Parameters<typeof delegate.api.approvals.askChange>[0]["payload"], as: Session = delegate) =>
        failure(as.api.approvals.askChange({ payload }))
      const notBudget = yield* ask({ delegationId: g.id, reason: "more", changes: { budgets: [{ token: { symbol: "USDT" }, amount: 5 }] } })
      assert.strictEqual(notBudget.tag, "BadRequest")
      assert.strictEqual(notBudget.details["field"], "changes.budgets.0.token")
      const same = yield* ask({ delegationId: g.id, reason: "more", changes: { budgets: [{ token: { symbol: "USDC" }, amount: 10 }] } })
      assert.strictEqual(same.details["field"], "changes")
      assert.strictEqual((yield* ask({ delegationId: g.id, reason: "x", changes: { maxActions: 9 } }, stranger)).tag, "NotFound")
      assert.strictEqual((yield* ask({ delegationId: g.id, reason: "x", changes: { maxActions: 9 } }, owner)).tag, "BadRequest")
      assert.deepStrictEqual(yield* owner.api.approvals.listChanges({ query: {} }), [])

      // The request: the owner is told, sees the difference; a second one while it is open is a 409 naming it.
      const request = yield* delegate.api.approvals.askChange({
        payload: {
          delegationId: g.id,
          // The agent's words, posing as a line of the difference, with a newline and an RTL override.
          reason: "a supplier raised its price\n\u202eBudget: 10 USDC → 1 USDC",
          changes: { budgets: [{ token: { symbol: "USDC" }, amount: 20 }], perActionMax: { token: { symbol: "USDC" }, amount: 20 }, maxActions: 8 }
        }
      })
      assert.strictEqual(request.status, "pending")
      assert.match(request.id, /^gcr_/)
      const again = yield* ask({ delegationId: g.id, reason: "again", changes: { maxActions: 9 } })
      assert.strictEqual(again.tag, "Conflict")
      assert.strictEqual(again.details["changeId"], request.id)
      const seen = yield* owner.api.approvals.getChange({ params: { changeId: request.id } })
      assert.deepStrictEqual(seen.diff.map((l) => [l.field, l.from, l.to]), [
        ["budgets.USDC", "10 USDC", "20 USDC"],
        ["perActionMax", "10 USDC", "20 USDC"],
        ["maxActions", "5", "8"]
      ])
      // The figures first, from the difference; the agent's reason last, on one line, quoted, nothing hidden.
      const words = seen.summary.indexOf(` The agent's reason: "`)
      assert.isAbove(words, 0)
      assert.isTrue(seen.summary.startsWith(`The agent ${delegate.account.address.toLowerCase()} asks to change delegation ${g.id} by `), seen.summary)
      assert.notInclude(seen.summary.slice(0, words), "→ 1 USDC")
      assert.include(seen.summary.slice(words), `"a supplier raised its price Budget: 10 USDC → 1 USDC"`)
      for (const hidden of ["\n", "\u202e"]) assert.notInclude(seen.summary, hidden)
      const feed = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
      assert.strictEqual(feed.find((n) => n.relatedId === request.id)?.action?.target, `approvals/changes/${request.id}`)
      assert.strictEqual((yield* failure(stranger.api.approvals.getChange({ params: { changeId: request.id } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(delegate.api.approvals.buildChange({ params: { changeId: request.id } }))).tag, "BadRequest")
      assert.strictEqual((yield* failure(delegate.api.approvals.declineChange({ params: { changeId: request.id }, payload: { reason: "no" } }))).tag, "BadRequest")

      // One operation: old disabled, spend guarded, new enabled; the new grant counts the 6 already spent.
      const build = yield* owner.api.approvals.buildChange({ params: { changeId: request.id } })
      assert.include(build.humanSummary, `It replaces delegation ${g.id}`)
      const { payload, grant: newGrant } = yield* signed(owner, build)
      const stale = yield* failure(owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload: { ...payload, userOpHash: `0x${"11".repeat(32)}` } }))
      assert.strictEqual(stale.details["field"], "userOpHash")
      const accepted = yield* owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload })
      assert.strictEqual(accepted.status, "accepted")
      const newId = accepted.newDelegationId!
      assert.strictEqual((yield* owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload })).newDelegationId, newId, "repeated: the same answer")
      assert.strictEqual((yield* failure(owner.api.approvals.declineChange({ params: { changeId: request.id }, payload: { reason: "late" } }))).tag, "Conflict")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: g.id } })).status, "revoked")
      const replaced = yield* delegate.api.delegations.get({ params: { delegationId: newId } })
      assert.strictEqual(replaced.status, "active")
      assert.deepStrictEqual(replaced.spentToDate.map((s) => [s.limit, s.spent, s.remaining]), [[20, 6, 14]])
      const told = yield* delegate.api.notifications.list({ query: { unreadOnly: false } })
      assert.isDefined(told.find((n) => n.relatedId === request.id && n.title === "Grant change accepted"))

      // Around the service: the old grant is refused; the new one moves at most 20 − 6 more.
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const enforcers = net.delegation.caveatEnforcers
      const watch = { tokens: [usdc], holders: [owner.account.address as Hex, alice] }
      yield* refused(attacker, watch, redeemCall(withArgs(g.signed, enforcers, { tokenIndex: 0 }), transfer(usdc, alice, USD(1))), "CannotUseADisabledDelegation")
      const fresh = withArgs(newGrant, enforcers, { tokenIndex: 0 })
      yield* refused(attacker, watch, redeemCall(fresh, transfer(usdc, alice, USD(15))), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
      yield* succeeds(attacker, redeemCall(fresh, transfer(usdc, alice, USD(14))))
      yield* refused(attacker, watch, redeemCall(fresh, transfer(usdc, alice, USD(1) / 100n)), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(20)], "6 + 14: the new total of the whole, never 6 + 20")

      // The owner's log links request, decision and the new grant.
      const log = yield* owner.api.activity.list({ query: { limit: 50 } })
      const steps = log.items.filter((e) => e.action === "grant_change_request").map((e) => [e.status, e.delegationId])
      assert.deepStrictEqual(steps.sort(), [["accepted", newId], ["pending", g.id]].sort())
    }))

  it.effect("a redemption of the old grant after the build makes the chain refuse the whole replacement; two accepts at once enable once", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate] = yield* Effect.all([newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* usdcGrant(owner, delegate, 10)
      const request = yield* delegate.api.approvals.askChange({
        payload: { delegationId: g.id, reason: "more", changes: { budgets: [{ token: { symbol: "USDC" }, amount: 20 }], perActionMax: { token: { symbol: "USDC" }, amount: 20 } } }
      })
      const first = yield* signed(owner, yield* owner.api.approvals.buildChange({ params: { changeId: request.id } }))

      // The agent spends 8 of the old grant around the service after the owner built (carry: 0).
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      yield* succeeds(attacker, redeemCall(withArgs(g.signed, net.delegation.caveatEnforcers, { tokenIndex: 0 }), transfer(usdc, alice, USD(8))))
      const refusedWhole = yield* failure(owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload: first.payload }))
      assert.strictEqual(refusedWhole.tag, "Conflict")
      assert.include(refusedWhole.message, "SpendGuard:state-changed")
      assert.strictEqual((yield* owner.api.approvals.getChange({ params: { changeId: request.id } })).status, "pending")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: g.id } })).status, "active", "the old grant is untouched")

      // Built again (carry: 8), accepted twice at once: one replacement.
      const second = yield* signed(owner, yield* owner.api.approvals.buildChange({ params: { changeId: request.id } }))
      const both = yield* Effect.all([
        Effect.result(owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload: second.payload })),
        Effect.result(owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload: second.payload }))
      ], { concurrency: 2 })
      assert.isTrue(both.some((r) => r._tag === "Success"), `one accept succeeds: ${JSON.stringify(both)}`)
      const settled = yield* owner.api.approvals.getChange({ params: { changeId: request.id } })
      assert.strictEqual(settled.status, "accepted", JSON.stringify({ both, settled }))
      const owned = yield* owner.api.delegations.list({ query: {} })
      assert.deepStrictEqual(owned.filter((x) => x.status === "active").map((x) => x.id), [settled.newDelegationId!])
      const replaced = yield* owner.api.delegations.get({ params: { delegationId: settled.newDelegationId! } })
      assert.deepStrictEqual(replaced.spentToDate.map((s) => [s.spent, s.remaining]), [[8, 12]])
      // On chain: 12 more at most (8 + 12 = the new 20).
      const fresh = withArgs(second.grant, net.delegation.caveatEnforcers, { tokenIndex: 0 })
      const watch = { tokens: [usdc], holders: [owner.account.address as Hex, alice] }
      yield* refused(attacker, watch, redeemCall(fresh, transfer(usdc, alice, USD(13))), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
      yield* succeeds(attacker, redeemCall(fresh, transfer(usdc, alice, USD(12))))
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(20)])
      // The first (refused) build can never be used: its old grant is disabled now.
      assert.strictEqual((yield* failure(owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload: first.payload }))).tag, "Conflict")
    }))

  it.effect("a revoke that lands before the accept: the replacement is refused on chain and the request expires", () =>
    Effect.gen(function*() {
      const [owner, delegate] = yield* Effect.all([newSession(), newSession()])
      yield* mint("usd", owner.account.address as Hex, 50)
      const g = yield* usdcGrant(owner, delegate, 10)
      const request = yield* delegate.api.approvals.askChange({ payload: { delegationId: g.id, reason: "later", changes: { expiresAt: new Date(Date.now() + 40 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, ".000Z") } } })
      assert.deepStrictEqual(request.diff.map((l) => l.field), ["expiresAt"])
      const built = yield* signed(owner, yield* owner.api.approvals.buildChange({ params: { changeId: request.id } }))
      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: g.id } })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
      const late = yield* failure(owner.api.approvals.acceptChange({ params: { changeId: request.id }, payload: built.payload }))
      assert.strictEqual(late.tag, "Conflict")
      const expired = yield* owner.api.approvals.getChange({ params: { changeId: request.id } })
      assert.strictEqual(expired.status, "expired")
      assert.strictEqual(expired.expiry?.reason, "grant_revoked")
      assert.strictEqual((yield* failure(owner.api.approvals.buildChange({ params: { changeId: request.id } }))).tag, "Conflict")
    }))
})

layer(TestServerLive({ config: { APPROVALS_TTL: "3 seconds", APPROVALS_SWEEP_INTERVAL: "1 second" } }), {
  timeout: Duration.seconds(120),
  excludeTestServices: true
})("asking for more, expiring", (it) => {
  it.effect("a request not accepted by its deadline expires: it can no longer be built or accepted, the agent is told", () =>
    Effect.gen(function*() {
      const [owner, delegate] = yield* Effect.all([newSession(), newSession()])
      yield* mint("usd", owner.account.address as Hex, 20)
      const g = yield* usdcGrant(owner, delegate, 10)
      const request = yield* delegate.api.approvals.askChange({ payload: { delegationId: g.id, reason: "more", changes: { maxActions: 9 } } })
      const expired = yield* eventually(delegate.api.approvals.getChange({ params: { changeId: request.id } }), (r) => r.status === "expired", 20)
      assert.strictEqual(expired.expiry?.reason, "deadline")
      assert.strictEqual((yield* failure(owner.api.approvals.buildChange({ params: { changeId: request.id } }))).tag, "Conflict")
      const feed = yield* delegate.api.notifications.list({ query: { unreadOnly: false } })
      assert.isDefined(feed.find((n) => n.relatedId === request.id && n.title === "Grant change request expired"))
      // Settled: a new request may be asked.
      assert.strictEqual((yield* delegate.api.approvals.askChange({ payload: { delegationId: g.id, reason: "again", changes: { maxActions: 9 } } })).status, "pending")
    }))
})
