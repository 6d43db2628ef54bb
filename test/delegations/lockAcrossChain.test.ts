/**
 * The grant's row lock is never held across a chain call. Every reservation reads the enforcers'
 * state from the chain (what the delegate spent around the service) and the grant's ledger under
 * its row lock; were the chain read made under the lock, a slow or hanging node would hold every
 * other action, payment and relay of the grant behind it. The service reads the chain here
 * through a loopback JSON-RPC gate that holds the enforcers' state read (`callCounts` of the
 * LimitedCallsEnforcer, the first of them) while the test tries the grant's row lock with NOWAIT
 * from its own connection, and looks for any transaction of the service left open meanwhile: for
 * a new action (its build), for its relay (the submit-time re-check, a staged policy check that
 * reads the chain before the relay's transaction) and for an action an approval rule holds back
 * (its reservation); and for an approved request past its deadline, which asks the chain whether
 * the agent spent it before it expires it (the request's row). Each then finishes as usual.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { mint, testNetwork } from "../support/TestChain.ts"
import { heldAndUnlocked, rpcGate } from "../support/rpcGate.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { approvalGrant, keyAddress, signApproval } from "../approvals/support.ts"
import { enabled, failure, newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("row locks and the chain", () => {
  it.live("a new action and its relay read the enforcers' state with the grant unlocked", () =>
    Effect.gen(function*() {
      const gate = yield* rpcGate(testNetwork().rpcUrl)
      const context = yield* Layer.build(TestServerLive({ chain: { rpcUrl: gate.url } }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const limited = net.delegation.caveatEnforcers["LimitedCallsEnforcer"]!.toLowerCase()
        // The enforcers' state read: a call of the LimitedCallsEnforcer (its `callCounts`).
        const stateRead = (body: string) => body.includes("eth_call") && body.toLowerCase().includes(limited)
        const owner = yield* newSession()
        const delegate = yield* newSession()
        yield* mint("usd", owner.account.address as Hex, 20)
        const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 5, maxActions: 3 })
        const recipient = privateKeyToAccount(generatePrivateKey()).address

        // The action: its build reads the chain with the grant's row free.
        const action = yield* heldAndUnlocked(
          gate,
          stateRead,
          delegate.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 2 } }),
          "the action",
          created.id
        )

        // Its relay: the submit-time re-check reads the chain with the grant's row free, and before
        // the relay's own transaction (its stored operation's row) begins.
        const signed = yield* signOp(delegate.key, action.userOp)
        const receipt = yield* heldAndUnlocked(gate, stateRead, relay(delegate.api, signed), "the relay's re-check", created.id)
        assert.strictEqual(receipt.outcome, "mined", JSON.stringify(receipt))

        // An action above an approval rule's threshold: reserved (`reserveFor`) while its request
        // opens; its chain read too leaves the grant's row free.
        const approver = yield* newSession()
        const ruled = yield* approvalGrant(owner, delegate, 10, { required: 1, approvers: [keyAddress(approver)], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })
        const asked = yield* heldAndUnlocked(
          gate,
          stateRead,
          failure(delegate.api.delegations.act({ params: { delegationId: ruled.id }, payload: { recipient, amount: 3 } })),
          "the approval path",
          ruled.id
        )
        assert.strictEqual(asked.reason, "approval_required", JSON.stringify(asked))
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped), 120_000)

  it.live("an approved request past its deadline asks the chain whether the agent spent it with its row unlocked", () =>
    Effect.gen(function*() {
      const gate = yield* rpcGate(testNetwork().rpcUrl)
      // A short deadline; no sweep (the request is settled on sight, by the owner's read).
      const context = yield* Layer.build(TestServerLive({
        chain: { rpcUrl: gate.url },
        config: { APPROVALS_TTL: "4 seconds", APPROVALS_SWEEP_INTERVAL: "1 hour" }
      }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const enforcer = net.delegation.caveatEnforcers["ApprovalEnforcer"]!.toLowerCase()
        // The enforcer's `spent` of the request's nonce: did the agent redeem it around the relay?
        const spentRead = (body: string) => body.includes("eth_call") && body.toLowerCase().includes(enforcer)
        const [owner, delegate, approver] = [yield* newSession(), yield* newSession(), yield* newSession()]
        yield* mint("usd", owner.account.address as Hex, 20)
        const g = yield* approvalGrant(owner, delegate, 10, { required: 1, approvers: [keyAddress(approver)], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })
        const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: privateKeyToAccount(generatePrivateKey()).address, amount: 3 } }))
        const id = held.details["approvalId"] as string
        const request = yield* approver.api.approvals.get({ params: { approvalId: id } })
        const approved = yield* approver.api.approvals.approve({ params: { approvalId: id }, payload: { signature: yield* signApproval(approver.key, request) } })
        assert.strictEqual(approved.status, "approved")
        yield* Effect.sleep(Duration.millis(Math.max(0, new Date(request.deadline).getTime() - Date.now()) + 500))

        const seen = yield* heldAndUnlocked(gate, spentRead, owner.api.approvals.get({ params: { approvalId: id } }), "the expiry", id, "approval_requests")
        assert.strictEqual(seen.status, "expired", JSON.stringify(seen))
        assert.strictEqual(seen.expiry?.reason, "deadline")
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped), 120_000)
})
