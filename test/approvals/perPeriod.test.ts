/**
 * A cumulative approval threshold splitting cannot escape (issue 44, item 2). The attack: with "approval
 * above 10 USDC per day", the agent sends 5, 5, 5 to the same recipient, each below the threshold.
 * Around the service (the delegate's own redemptions, straight to the bundler and by its own
 * handleOps) the third is refused by the chain (`ApprovalEnforcer:not-enough-approvals`), nothing
 * moves; through the service the third answers `approval_required`, and with 2 of 3 approvals the
 * held execution goes through (and, approved, is not counted). Per recipient: splitting across
 * recipients is fine, one recipient is capped. The period renews (a period of a few seconds, its
 * boundaries read from the chain's own blocks). The summary says which kind of threshold it is.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address, Hex } from "viem"
import { Network } from "../../src/chain/Network.ts"
import { balances, type GrantInput, grant, makeAttacker, redeemCall, refused, succeeds, transfer } from "../delegations/attacker.ts"
import { failure, newSession, relay, type Session, signOp } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { eventually, keyAddress, randomAddress, type RuleInput, setOf, signApproval, USD, withApprovals } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

type PeriodRule = RuleInput & {
  readonly period?: { readonly every?: "day"; readonly seconds?: number; readonly start?: string }
  readonly perRecipient?: boolean
}

/** A USDC grant of 50 (per action up to 50) whose approvals are `rule`'s. */
const periodGrant = (owner: Session, delegate: Session, rule: PeriodRule) =>
  grant(owner, delegate, {
    budgets: [{ token: { symbol: "USDC" }, amount: 50 }],
    perActionMax: { token: { symbol: "USDC" }, amount: 50 },
    maxActions: 20,
    approval: rule
  } as GrantInput)

const ten = [{ token: { symbol: "USDC" }, amount: 10 }]

/** The delegate's own redemption of `units` to `to`, no approvals attached. */
const own = (signed: Parameters<typeof withApprovals>[0], usdc: Address, to: Address, units: bigint) =>
  Effect.map(withApprovals(signed, undefined), (d) => redeemCall(d, transfer(usdc, to, units)))

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("a cumulative approval threshold", (it) => {
  it.effect("5 + 5 + 5 to one recipient under 10 per day: the chain refuses the third; the service asks for approval; 2 of 3 approve and it executes", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate, a1, a2] = yield* Effect.all([newSession(), newSession(), newSession(), newSession()])
      const bob = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)

      // Bad input: per recipient without a period; a period that is not one.
      const base = { name: "bad", kind: "agent" as const, delegateeAddress: delegate.account.address, chainId: net.chainId, budgets: [{ token: { symbol: "USDC" }, amount: 50 }] }
      const noPeriod = yield* failure(owner.api.delegations.build({
        payload: { ...base, approval: { required: 1, approvers: [keyAddress(a1)], thresholds: ten, perRecipient: true } }
      }))
      assert.strictEqual(noPeriod.details["field"], "approval.perRecipient")
      const both = yield* failure(owner.api.delegations.build({
        payload: { ...base, approval: { required: 1, approvers: [keyAddress(a1)], thresholds: ten, period: { every: "day", seconds: 60 } } }
      }))
      assert.strictEqual(both.details["field"], "approval.period")

      const g = yield* periodGrant(owner, delegate, {
        required: 2,
        approvers: [keyAddress(a1), keyAddress(a2), randomAddress()],
        thresholds: ten,
        period: { every: "day" }
      })
      // The summary, from the signed terms, says which kind of threshold it is.
      assert.include(g.summary, "above 10 USDC per day")
      assert.include(g.summary, "The approval threshold is cumulative per token and period")

      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const watch = { tokens: [usdc], holders: [owner.account.address as Hex, bob] }
      const [, bob0] = yield* balances(attacker, [usdc], watch.holders)
      yield* succeeds(attacker, yield* own(g.signed, usdc, bob, USD(5)))
      yield* succeeds(attacker, yield* own(g.signed, usdc, bob, USD(5)))
      // The third 5: 15 without approvals in the day. Refused by the chain on both routes, nothing moves.
      yield* refused(attacker, watch, yield* own(g.signed, usdc, bob, USD(5)), "ApprovalEnforcer:not-enough-approvals")
      // Even 1 more: the day's 10 are used.
      yield* refused(attacker, watch, yield* own(g.signed, usdc, bob, USD(1)), "ApprovalEnforcer:not-enough-approvals")
      assert.deepStrictEqual((yield* balances(attacker, [usdc], [bob]))[0], bob0! + USD(10))

      // Through the service the third is held before the chain would refuse it.
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: bob, amount: 5 } }))
      assert.strictEqual(held.reason, "approval_required")
      const id = held.details["approvalId"] as string
      const request = yield* a1.api.approvals.get({ params: { approvalId: id } })
      assert.include(request.summary, "cumulative threshold of 10 USDC per day without approvals")
      assert.include(request.summary, "10 USDC already moved")

      // One approval is not enough on chain either.
      const s1 = yield* signApproval(a1.key, request)
      yield* refused(
        attacker,
        watch,
        redeemCall(yield* withApprovals(g.signed, setOf(request, [{ approver: keyAddress(a1), signature: s1 }])), transfer(usdc, bob, USD(5))),
        "ApprovalEnforcer:not-enough-approvals"
      )
      // 2 of 3: the held execution goes through the service.
      yield* a1.api.approvals.approve({ params: { approvalId: id }, payload: { signature: s1 } })
      const approved = yield* a2.api.approvals.approve({ params: { approvalId: id }, payload: { signature: yield* signApproval(a2.key, request) } })
      assert.strictEqual(approved.status, "approved")
      const built = yield* delegate.api.approvals.build({ params: { approvalId: id } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, built.userOp))).outcome, "mined")
      assert.deepStrictEqual((yield* balances(attacker, [usdc], [bob]))[0], bob0! + USD(15))
      yield* eventually(owner.api.approvals.get({ params: { approvalId: id } }), (r) => r.status === "executed")
      // The approved 5 did not count: still 10 moved without approvals, so another 1 alone is still refused.
      yield* refused(attacker, watch, yield* own(g.signed, usdc, bob, USD(1)), "ApprovalEnforcer:not-enough-approvals")
    }))

  it.effect("per recipient: splitting across recipients is fine, one recipient is capped", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate, a1] = yield* Effect.all([newSession(), newSession(), newSession()])
      const [bob, carol] = [randomAddress(), randomAddress()]
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* periodGrant(owner, delegate, { required: 1, approvers: [keyAddress(a1)], thresholds: ten, period: { every: "day" }, perRecipient: true })
      assert.include(g.summary, "per day to one recipient")
      assert.include(g.summary, "The approval threshold is cumulative per token and recipient and period")
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const watch = { tokens: [usdc], holders: [owner.account.address as Hex, bob, carol] }
      const before = yield* balances(attacker, [usdc], [bob, carol])
      yield* succeeds(attacker, yield* own(g.signed, usdc, bob, USD(5)))
      yield* succeeds(attacker, yield* own(g.signed, usdc, carol, USD(5)))
      yield* succeeds(attacker, yield* own(g.signed, usdc, bob, USD(5)))
      yield* succeeds(attacker, yield* own(g.signed, usdc, carol, USD(5)))
      // 20 moved without approvals in all, 10 to each: a third transfer to either is refused.
      yield* refused(attacker, watch, yield* own(g.signed, usdc, bob, USD(5)), "ApprovalEnforcer:not-enough-approvals")
      yield* refused(attacker, watch, yield* own(g.signed, usdc, carol, USD(1)), "ApprovalEnforcer:not-enough-approvals")
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [bob, carol]), [before[0]! + USD(10), before[1]! + USD(10)])
      // Through the service: a new recipient is fine, bob is held.
      const dave = randomAddress()
      const ok = yield* delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: dave, amount: 5 } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, ok.userOp))).outcome, "mined")
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: bob, amount: 1 } }))
      assert.strictEqual(held.reason, "approval_required")
    }))

  it.effect("the period renews: what moved without approvals counts in its own period only (the chain's clock)", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate, a1] = yield* Effect.all([newSession(), newSession(), newSession()])
      const bob = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const PERIOD = 6n
      const start = new Date(Math.floor(Date.now() / 1000) * 1000)
      const g = yield* periodGrant(owner, delegate, {
        required: 1,
        approvers: [keyAddress(a1)],
        thresholds: ten,
        period: { seconds: Number(PERIOD), start: start.toISOString() }
      })
      assert.include(g.summary, "per 6 seconds")
      const startSeconds = BigInt(start.getTime() / 1000)
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const indexAt = (t: bigint) => (t - startSeconds) / PERIOD
      // The chain's clock: a block mined now (an empty one: it does not move the clock) and its timestamp.
      const chainNow = Effect.promise(async () => {
        await attacker.publicClient.request({ method: "evm_mine" as never, params: [] as never })
        return (await attacker.publicClient.getBlock({ blockTag: "latest" })).timestamp
      })
      const waitPast = (index: bigint) =>
        Effect.gen(function*() {
          while (indexAt(yield* chainNow) <= index) yield* Effect.sleep(Duration.millis(300))
        })
      const ownOp = (units: bigint) =>
        Effect.flatMap(own(g.signed, usdc, bob, units), (call) => Effect.promise(() => attacker.viaHandleOps(call)))
      // Fill a period to its threshold and be refused 1 more in it; if load makes the two land in
      // different periods (the chain's blocks say so), the attempt proves nothing: again in the next.
      let proven: bigint | undefined
      for (let attempt = 0; attempt < 4 && proven === undefined; attempt++) {
        yield* waitPast(indexAt(yield* chainNow))
        const first = indexAt(yield* chainNow)
        const fill = yield* ownOp(USD(10))
        const over = yield* ownOp(USD(1))
        if (indexAt(yield* chainNow) !== first) continue
        assert.isTrue(fill.ok, fill.ok ? "" : fill.raw)
        assert.isFalse(over.ok, "1 more in the same period needs approvals")
        if (!over.ok) assert.include(over.reason, "ApprovalEnforcer:not-enough-approvals")
        proven = first
      }
      assert.isDefined(proven, "a period filled and refused within itself")
      const [before] = yield* balances(attacker, [usdc], [bob])
      // The next period: the threshold is whole again.
      yield* waitPast(proven!)
      const renewed = yield* ownOp(USD(10))
      assert.isTrue(renewed.ok, renewed.ok ? "" : renewed.raw)
      assert.deepStrictEqual((yield* balances(attacker, [usdc], [bob]))[0], before! + USD(10))
    }))
})
