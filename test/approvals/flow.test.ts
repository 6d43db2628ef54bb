/**
 * Approvals above a threshold through the service (issue 25): an action above the grant's
 * threshold becomes a pending request (nothing built), every approver and the owner are told
 * with a deep link; the approvers sign the ApprovalEnforcer's EIP-712 `Approval`; at 2 of 3 the
 * agent builds, relays and the transfer executes once. Around the service, the delegate's own
 * redemptions are refused by the chain without enough approvals, with one approver twice, and
 * replayed after execution (balances read on chain). Races: two approvals at once, an approval
 * and a denial at once; a denial frees the budget it held.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { balances, makeAttacker, redeemCall, refused, succeeds, transfer } from "../delegations/attacker.ts"
import { failure, newSession, relay, signOp } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { approvalGrant, eventually, keyAddress, randomAddress, setOf, signApproval, USD, withApprovals } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

/** One sample of a Prometheus text exposition (`name{labels}`, labels in the order prom-client writes them). */
const sampleOf = (text: string, series: string): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  assert.isDefined(line, `no ${series} in the scrape`)
  return Number(line!.slice(series.length + 1))
}

layer(TestServerLive(), { timeout: Duration.seconds(240), excludeTestServices: true })("approvals through the service", (it) => {
  it.effect("above the threshold: a pending request, 2 of 3 approvals, one execution; the chain refuses anything less", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate, a1, a2, stranger] = yield* Effect.all([newSession(), newSession(), newSession(), newSession(), newSession()])
      const a3 = randomAddress()
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* approvalGrant(owner, delegate, 50, {
        required: 2,
        approvers: [keyAddress(a1), keyAddress(a2), a3],
        thresholds: [{ token: { symbol: "USDC" }, amount: 5 }]
      })

      // At or below the threshold the agent acts alone.
      const small = yield* delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 3 } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, small.userOp))).outcome, "mined")

      // Above it: no build, a request (the same one for the same action asked again).
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 12 } }))
      assert.strictEqual(held.reason, "approval_required")
      const id = held.details["approvalId"] as string
      assert.match(id, /^apr_/)
      const again = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 12 } }))
      assert.strictEqual(again.details["approvalId"], id)

      // Who may read it: owner, approvers, agent; a stranger gets a 404.
      const seen = yield* a1.api.approvals.get({ params: { approvalId: id } })
      assert.strictEqual(seen.status, "pending")
      assert.strictEqual(seen.units, "12000000")
      assert.strictEqual(seen.required, 2)
      assert.strictEqual(seen.agent, delegate.account.address.toLowerCase())
      assert.strictEqual(seen.toSign.domain.verifyingContract.toLowerCase(), net.delegation.caveatEnforcers["ApprovalEnforcer"]!.toLowerCase())
      assert.strictEqual(seen.toSign.message.delegationHash.toLowerCase(), (yield* delegate.api.delegations.get({ params: { delegationId: g.id } })).permissionId.toLowerCase())
      assert.strictEqual((yield* failure(stranger.api.approvals.get({ params: { approvalId: id } }))).tag, "NotFound")
      assert.strictEqual((yield* delegate.api.approvals.get({ params: { approvalId: id } })).id, id)
      assert.deepStrictEqual((yield* stranger.api.approvals.list({ query: {} })).map((r) => r.id), [])
      assert.include((yield* owner.api.approvals.list({ query: { status: "pending" } })).map((r) => r.id), id)

      // Told at once, with the deep link: the owner and each approver that signs in.
      for (const who of [owner, a1, a2]) {
        const feed = yield* who.api.notifications.list({ query: { unreadOnly: false } })
        const n = feed.find((x) => x.relatedId === id)
        assert.isDefined(n, "notified")
        assert.strictEqual(n!.action?.target, `approvals/${id}`)
      }

      // Not before it is approved: the agent cannot build it.
      assert.strictEqual((yield* failure(delegate.api.approvals.build({ params: { approvalId: id } }))).tag, "Conflict")

      // Around the service: the delegate's own redemption of the same transfer, with no approvals.
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const watch = { tokens: [usdc], holders: [owner.account.address as Hex, alice] }
      const execution = transfer(usdc, alice, USD(12))
      yield* refused(attacker, watch, redeemCall(yield* withApprovals(g.signed, undefined), execution), "ApprovalEnforcer:not-enough-approvals")

      // One approval of 2: counted, still pending; the chain refuses it alone, and the same approver twice.
      const s1 = yield* signApproval(a1.key, seen)
      const after1 = yield* a1.api.approvals.approve({ params: { approvalId: id }, payload: { signature: s1 } })
      assert.strictEqual(after1.status, "pending")
      assert.deepStrictEqual(after1.approvals.map((a) => a.approver), [keyAddress(a1)])
      const one = { approver: keyAddress(a1), signature: s1 }
      yield* refused(attacker, watch, redeemCall(yield* withApprovals(g.signed, setOf(seen, [one])), execution), "ApprovalEnforcer:not-enough-approvals")
      yield* refused(attacker, watch, redeemCall(yield* withApprovals(g.signed, setOf(seen, [one, one])), execution), "ApprovalEnforcer:duplicate-approver")
      // For a different amount the same signatures name another execution.
      yield* refused(attacker, watch, redeemCall(yield* withApprovals(g.signed, setOf(seen, [one, one])), transfer(usdc, alice, USD(11))), "ApprovalEnforcer:")

      // Bad approvals change nothing: a stranger's signature, an approver of nothing here, a signature of another request.
      const strangerSig = yield* signApproval(generatePrivateKey(), seen)
      const badSig = yield* failure(a2.api.approvals.approve({ params: { approvalId: id }, payload: { signature: strangerSig } }))
      assert.strictEqual(badSig.tag, "BadRequest")
      assert.include(badSig.message, "signature")
      const notNamed = yield* failure(stranger.api.approvals.approve({ params: { approvalId: id }, payload: { signature: strangerSig } }))
      assert.strictEqual(notNamed.tag, "NotFound")
      const wrongApprover = yield* failure(a2.api.approvals.approve({ params: { approvalId: id }, payload: { signature: s1, approver: keyAddress(stranger) } }))
      assert.strictEqual(wrongApprover.tag, "BadRequest")
      assert.lengthOf((yield* owner.api.approvals.get({ params: { approvalId: id } })).approvals, 1)

      // The second approval: approved; the agent builds (its approvals attached), signs, relays; it executes once.
      const s2 = yield* signApproval(a2.key, seen)
      const approved = yield* a2.api.approvals.approve({ params: { approvalId: id }, payload: { signature: s2 } })
      assert.strictEqual(approved.status, "approved")
      const before = yield* balances(attacker, [usdc], [alice])
      const build = yield* delegate.api.approvals.build({ params: { approvalId: id } })
      const sameBuild = yield* delegate.api.approvals.build({ params: { approvalId: id } })
      assert.strictEqual(sameBuild.userOpHash, build.userOpHash, "asked again: the same open build")
      assert.strictEqual((yield* failure(stranger.api.approvals.build({ params: { approvalId: id } }))).tag, "NotFound")
      const receipt = yield* relay(delegate.api, yield* signOp(delegate.key, build.userOp))
      assert.strictEqual(receipt.outcome, "mined")
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [before[0]! + USD(12)])
      const executed = yield* eventually(owner.api.approvals.get({ params: { approvalId: id } }), (r) => r.status === "executed")
      assert.strictEqual(executed.execution?.txHash, receipt.transactionHash)

      // Spent: building again is refused, and the chain refuses the same approvals replayed.
      assert.strictEqual((yield* failure(delegate.api.approvals.build({ params: { approvalId: id } }))).tag, "Conflict")
      const two = [one, { approver: keyAddress(a2), signature: s2 }]
      yield* refused(attacker, watch, redeemCall(yield* withApprovals(g.signed, setOf(seen, two)), execution), "ApprovalEnforcer:nonce-used")
      assert.strictEqual((yield* failure(a1.api.approvals.deny({ params: { approvalId: id }, payload: { reason: "too late" } }))).tag, "Conflict")

      // The owner's log has each step.
      const log = yield* owner.api.activity.list({ query: { limit: 50, delegationId: g.id } })
      const steps = log.items.filter((e) => e.action === "approval_request" || e.action === "approval_signature").map((e) => e.status)
      for (const s of ["pending", "approved", "spent"]) assert.include(steps, s)
    }))

  it.effect("the approval queue on /metrics: pending per chain, the oldest's age, settled by outcome", () =>
    Effect.gen(function*() {
      const { metricsUrl } = yield* TestServer
      const chainId = (yield* Network).chainId
      const scrape = Effect.promise(() => fetch(metricsUrl).then((r) => r.text()))
      const pending = `das_approval_requests{chain_id="${chainId}",status="pending"}`
      const denied = `das_approval_requests{chain_id="${chainId}",status="denied"}`
      const oldest = `das_approval_oldest_pending_seconds{chain_id="${chainId}"}`
      const [owner, delegate, a1] = yield* Effect.all([newSession(), newSession(), newSession()])
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* approvalGrant(owner, delegate, 50, {
        required: 1,
        approvers: [keyAddress(a1)],
        thresholds: [{ token: { symbol: "USDC" }, amount: 5 }]
      })
      const before = yield* scrape
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: randomAddress(), amount: 12 } }))
      const id = held.details["approvalId"] as string
      yield* Effect.sleep("50 millis")
      const queued = yield* scrape
      assert.strictEqual(sampleOf(queued, pending), sampleOf(before, pending) + 1)
      assert.isAbove(sampleOf(queued, oldest), 0)
      // Every served chain is shown, a chain with nothing queued as 0.
      assert.include(queued, `das_approval_requests{chain_id="31338",status="pending"}`)

      yield* a1.api.approvals.deny({ params: { approvalId: id }, payload: { reason: "not this one" } })
      const settled = yield* scrape
      assert.strictEqual(sampleOf(settled, pending), sampleOf(before, pending))
      assert.strictEqual(sampleOf(settled, denied), sampleOf(before, denied) + 1)
    }))

  it.effect("an approver of another grant sees and approves nothing of this one; revoking the grant expires its pending request", () =>
    Effect.gen(function*() {
      const [owner, delegate, a1, other] = yield* Effect.all([newSession(), newSession(), newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const usdcAbove1 = [{ token: { symbol: "USDC" }, amount: 1 }]
      const g = yield* approvalGrant(owner, delegate, 20, { required: 1, approvers: [keyAddress(a1)], thresholds: usdcAbove1 })
      const g2 = yield* approvalGrant(owner, delegate, 20, { required: 1, approvers: [keyAddress(other)], thresholds: usdcAbove1 })
      const ask = (grantId: string) =>
        failure(delegate.api.delegations.act({ params: { delegationId: grantId }, payload: { recipient: alice, amount: 5 } })).pipe(
          Effect.map((f) => f.details["approvalId"] as string)
        )
      const id = yield* ask(g.id)
      const id2 = yield* ask(g2.id)
      const request = yield* a1.api.approvals.get({ params: { approvalId: id } })

      // `other` approves g2's requests only: g's is a 404 to it, whatever it signs or names.
      assert.strictEqual((yield* failure(other.api.approvals.get({ params: { approvalId: id } }))).tag, "NotFound")
      const otherSig = yield* signApproval(other.key, request)
      assert.strictEqual((yield* failure(other.api.approvals.approve({ params: { approvalId: id }, payload: { signature: otherSig } }))).tag, "NotFound")
      assert.strictEqual(
        (yield* failure(other.api.approvals.approve({ params: { approvalId: id }, payload: { signature: otherSig, approver: keyAddress(a1) } }))).tag,
        "NotFound"
      )
      assert.strictEqual((yield* failure(other.api.approvals.deny({ params: { approvalId: id }, payload: { reason: "mine now" } }))).tag, "NotFound")
      assert.deepStrictEqual((yield* other.api.approvals.list({ query: {} })).map((r) => r.id), [id2])
      // The agent reads its request but cannot approve it.
      assert.strictEqual((yield* failure(delegate.api.approvals.approve({ params: { approvalId: id }, payload: { signature: otherSig } }))).tag, "BadRequest")
      assert.strictEqual((yield* a1.api.approvals.get({ params: { approvalId: id } })).status, "pending")

      // Revoking the grant settles its pending request (expired, grant_revoked); it can never be approved.
      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: g.id } })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
      const expired = yield* eventually(a1.api.approvals.get({ params: { approvalId: id } }), (r) => r.status === "expired")
      assert.strictEqual(expired.expiry?.reason, "grant_revoked")
      const late = yield* failure(a1.api.approvals.approve({ params: { approvalId: id }, payload: { signature: yield* signApproval(a1.key, request) } }))
      assert.strictEqual(late.tag, "Conflict")
      assert.strictEqual((yield* other.api.approvals.get({ params: { approvalId: id2 } })).status, "pending", "the other grant's request is untouched")
    }))

  it.effect("races: two approvals at once approve once; an approval and a denial at once settle once; a denial frees the budget", () =>
    Effect.gen(function*() {
      const [owner, delegate, a1, a2] = yield* Effect.all([newSession(), newSession(), newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* approvalGrant(owner, delegate, 20, {
        required: 2,
        approvers: [keyAddress(a1), keyAddress(a2)],
        thresholds: [{ token: { symbol: "USDC" }, amount: 1 }]
      })
      const ask = (amount: number) =>
        failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount } })).pipe(
          Effect.map((f) => {
            assert.strictEqual(f.reason, "approval_required", f.message)
            return f.details["approvalId"] as string
          })
        )

      // Two approvals at once: both count, one transition to approved.
      const first = yield* ask(8)
      const request = yield* owner.api.approvals.get({ params: { approvalId: first } })
      const [x, y] = yield* Effect.all([
        a1.api.approvals.approve({ params: { approvalId: first }, payload: { signature: yield* signApproval(a1.key, request) } }),
        a2.api.approvals.approve({ params: { approvalId: first }, payload: { signature: yield* signApproval(a2.key, request) } })
      ], { concurrency: 2 })
      assert.sameMembers([x.status, y.status], ["pending", "approved"])
      const both = yield* owner.api.approvals.get({ params: { approvalId: first } })
      assert.strictEqual(both.status, "approved")
      assert.lengthOf(both.approvals, 2)

      // 8 held and 12 more would exceed the 20: declined while the first holds its budget.
      const second = yield* ask(10)
      const over = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 3 } }))
      assert.strictEqual(over.reason, "cap_exceeded")

      // An approval and a denial at once (1 more approval would approve it? here 2 are needed: a1 approves, a2 denies).
      const r2 = yield* owner.api.approvals.get({ params: { approvalId: second } })
      const outcomes = yield* Effect.all([
        Effect.result(a1.api.approvals.approve({ params: { approvalId: second }, payload: { signature: yield* signApproval(a1.key, r2) } })),
        Effect.result(a2.api.approvals.deny({ params: { approvalId: second }, payload: { reason: "not this week" } }))
      ], { concurrency: 2 })
      const settled = yield* owner.api.approvals.get({ params: { approvalId: second } })
      assert.strictEqual(settled.status, "denied")
      assert.strictEqual(settled.denial?.reason, "not this week")
      assert.isTrue(outcomes[1]._tag === "Success", "the denial of a pending request succeeds")
      // The denied request's 10 is free again: 2 more fit next to the approved 8 (and are held as a request of their own).
      const third = yield* ask(2)
      assert.notStrictEqual(third, second)
      // A denied request can never be approved or built.
      assert.strictEqual((yield* failure(a1.api.approvals.approve({ params: { approvalId: second }, payload: { signature: yield* signApproval(a1.key, r2) } }))).tag, "Conflict")
      assert.strictEqual((yield* failure(delegate.api.approvals.build({ params: { approvalId: second } }))).tag, "Conflict")
    }))
})

layer(TestServerLive({ config: { APPROVALS_TTL: "8 seconds", APPROVALS_SWEEP_INTERVAL: "1 second" } }), {
  timeout: Duration.seconds(120),
  excludeTestServices: true
})("approvals that expire", (it) => {
  it.effect("past its deadline a request is expired by the sweep, its budget freed, and approving it is refused", () =>
    Effect.gen(function*() {
      const [owner, delegate, a1] = yield* Effect.all([newSession(), newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* approvalGrant(owner, delegate, 10, { required: 1, approvers: [keyAddress(a1)], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 9 } }))
      const id = held.details["approvalId"] as string
      const request = yield* a1.api.approvals.get({ params: { approvalId: id } })
      const signature = yield* signApproval(a1.key, request)
      const expired = yield* eventually(owner.api.approvals.get({ params: { approvalId: id } }), (r) => r.status === "expired", 40)
      assert.strictEqual(expired.expiry?.reason, "deadline")
      const late = yield* failure(a1.api.approvals.approve({ params: { approvalId: id }, payload: { signature } }))
      assert.strictEqual(late.tag, "Conflict")
      // Its 9 are free: 9 more is a new request, not a budget decline.
      const next = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 9 } }))
      assert.strictEqual(next.reason, "approval_required")
      assert.notStrictEqual(next.details["approvalId"], id)
      const feed = yield* delegate.api.notifications.list({ query: { unreadOnly: false } })
      assert.isDefined(feed.find((n) => n.relatedId === id && n.title === "Approval request expired"))
    }))

  it.effect("approvals the agent redeems itself (around the relay) are not expired at the deadline: the chain spent them, the request is executed", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const [owner, delegate, a1] = yield* Effect.all([newSession(), newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      const g = yield* approvalGrant(owner, delegate, 10, { required: 1, approvers: [keyAddress(a1)], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 7 } }))
      const id = held.details["approvalId"] as string
      const request = yield* a1.api.approvals.get({ params: { approvalId: id } })
      const signature = yield* signApproval(a1.key, request)
      assert.strictEqual((yield* a1.api.approvals.approve({ params: { approvalId: id }, payload: { signature } })).status, "approved")
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      yield* succeeds(
        attacker,
        redeemCall(yield* withApprovals(g.signed, setOf(request, [{ approver: keyAddress(a1), signature }])), transfer(net.tokens.usd.address, alice, USD(7)))
      )
      assert.deepStrictEqual(yield* balances(attacker, [net.tokens.usd.address], [alice]), [USD(7)])
      const settled = yield* eventually(owner.api.approvals.get({ params: { approvalId: id } }), (r) => r.status !== "approved", 40)
      assert.strictEqual(settled.status, "executed")
      assert.isDefined(settled.execution?.at)
    }))
})
