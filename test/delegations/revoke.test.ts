/**
 * Revocation as a kill-switch, on the local network with real signatures:
 * - a revoke executed: the delegate's pre-built action is declined at the relay (422,
 *   audit, nothing spent) and the chain refuses the same operation too;
 * - forged revokes (another account's operation carrying this delegation's struct) and
 *   unknown permission ids change nothing;
 * - rejected and reverted revokes change nothing;
 * - a failed delegated action frees its reservation (the relay's on-failed hook).
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { encodeFunctionData, type Hash, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { DelegationManager } from "@metamask/delegation-abis"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { toDelegationStruct } from "@metamask/smart-accounts-kit/utils"
import { fromWire } from "../../src/builds/Wire.ts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { Network } from "../../src/chain/Network.ts"
import { makeLeg, randomSalt } from "../../src/delegations/Caveats.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import {
  disabledOnChain,
  dmErrorIn,
  enabled,
  failure,
  newSession,
  relay,
  signOp,
  storeBuild,
  usdcBalance
} from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase()

/** `DelegationManager.disableDelegation(leg)` call data. */
const dmDisable = (leg: Delegation) => {
  const s = toDelegationStruct(leg)
  return encodeFunctionData({
    abi: DelegationManager,
    functionName: "disableDelegation",
    args: [{
      delegate: s.delegate,
      delegator: s.delegator,
      authority: s.authority,
      caveats: s.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms, args: c.args })),
      salt: s.salt,
      signature: s.signature
    }]
  })
}

const reservationStatuses = (delegationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ status: string }>`SELECT status FROM delegation_reservations WHERE delegation_id = ${delegationId} ORDER BY created_at`.pipe(
      Effect.map((rows) => rows.map((r) => r.status))
    ))

layer(TestServerLive(), { timeout: Duration.seconds(90), excludeTestServices: true })("revoke", (it) => {
  it.effect("after a revoke executed, the relay declines the delegate's pre-built action (422) and the chain refuses it", () =>
    Effect.gen(function*() {
      const bundler = yield* Bundler
      const net = yield* Network
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 50)
      const { created, leg } = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })
      const id = created.id

      // Built (and reserved) while the delegation was active; signed by the delegate.
      const action = yield* owner.api.delegations.act({ params: { delegationId: id }, payload: { recipient, amount: 5 } })
      const signedAction = yield* signOp(delegate.key, action.userOp)
      assert.deepStrictEqual(yield* reservationStatuses(id), ["reserved"])

      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: id } })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: id } })).status, "revoked")
      assert.isTrue(yield* disabledOnChain(leg.permissionId))
      assert.deepStrictEqual(yield* reservationStatuses(id), ["released"])

      // d. Relay-time re-check: 422 out_of_scope `revoked`, stored as declined with its audit entry; nothing sent.
      const declined = yield* failure(delegate.api.userops.submit({ payload: signedAction }))
      assert.deepStrictEqual([declined.tag, declined.reason], ["OutOfScope", "revoked"])
      const userOpId = declined.details["userOpId"] as string
      const stored = yield* delegate.api.userops.get({ params: { userOpId }, query: {} })
      assert.deepStrictEqual([stored.status, stored.outcome, stored.reason], ["failed", "rejected", "declined: revoked"])
      const event = yield* delegate.api.activity.get({ params: { eventId: stored.auditEventId! } })
      assert.deepStrictEqual([event.status, event.declineReason], ["declined", "revoked"])
      const notes = yield* delegate.api.notifications.list({ query: { unreadOnly: false } })
      assert.isTrue(notes.some((n) => n.tone === "danger" && n.relatedId === event.id))
      const after = yield* owner.api.delegations.get({ params: { delegationId: id } })
      assert.deepStrictEqual(after.spentToDate.map((s) => [s.spent, s.remaining]), [[0, 20]])
      assert.deepStrictEqual(yield* reservationStatuses(id), ["released"])
      assert.strictEqual(yield* bundler.getUserOperationReceipt(stored.userOpHash as Hash), null)

      // b. The chain refuses the delegate too: estimation reverts with the DelegationManager's
      // CannotUseADisabledDelegation; sent straight to the bundler with the build's fixed gas,
      // it is included and reverts with the same error; nothing moves.
      const estimate = yield* bundler.estimateUserOperationGas(fromWire(signedAction)).pipe(Effect.flip)
      assert.strictEqual(estimate._tag, "BundlerRejected")
      const estimateText = estimate._tag === "BundlerRejected" ? `${estimate.message} ${JSON.stringify(estimate.data ?? "")}` : ""
      assert.strictEqual(dmErrorIn(estimateText), "CannotUseADisabledDelegation", estimateText)
      const sent = yield* bundler.sendUserOperation(fromWire(signedAction)).pipe(Effect.result)
      if (sent._tag === "Failure") {
        // A bundler that simulates execution refuses it outright: also the chain's verdict.
        assert.strictEqual(dmErrorIn(`${sent.failure.message}`), "CannotUseADisabledDelegation", sent.failure.message)
      } else {
        let receipt = yield* bundler.getUserOperationReceipt(sent.success)
        for (let i = 0; i < 100 && receipt === null; i++) {
          yield* Effect.sleep(Duration.millis(200))
          receipt = yield* bundler.getUserOperationReceipt(sent.success)
        }
        assert.isFalse(receipt!.success)
        assert.strictEqual(dmErrorIn(receipt!.reason), "CannotUseADisabledDelegation", receipt!.reason)
      }
      assert.strictEqual(yield* usdcBalance(recipient), 0n)
      assert.strictEqual(yield* usdcBalance(owner.account.address), 50_000_000n)
      assert.strictEqual(net.chainId, stored.chainId)
    }))

  it.effect("forged revokes (another account's operation with this delegation's struct) and unknown ids change nothing", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const stack = yield* AccountStack
      const alice = yield* newSession()
      const aliceDelegate = yield* newSession()
      const bob = yield* newSession()
      yield* mint("usd", alice.account.address as Hex, 10)
      const { created, leg } = yield* enabled(alice, aliceDelegate, { budget: 10, perAction: 5, maxActions: 5 })

      // 1. Bob's account disables Alice's delegation through its own disableDelegation: the chain
      // refuses (Alice's account is the delegator), the operation reverts.
      const forged = yield* storeBuild(bob, {
        intentType: "delegation_revoke",
        callData: stack.encodeDisableDelegation(leg.delegation as Delegation),
        riskReducing: true
      })
      const forgedReceipt = yield* relay(bob.api, yield* signOp(bob.key, forged.userOp))
      assert.strictEqual(forgedReceipt.outcome, "reverted")

      // 2. Executed, carrying Alice's struct: Bob's account "calls" disableDelegation(Alice's leg)
      // on an address that is not the DelegationManager (it succeeds and disables nothing).
      const decoy = yield* storeBuild(bob, {
        intentType: "delegation_revoke",
        calls: [{ to: randomAddress() as Hex, data: dmDisable(leg.delegation as Delegation) }],
        riskReducing: true
      })
      assert.strictEqual((yield* relay(bob.api, yield* signOp(bob.key, decoy.userOp))).outcome, "mined")

      // 3. Unknown permission id: Bob disables a delegation of his own the service never saw.
      // Executed on chain; not an error; nothing changes.
      const unknownLeg = makeLeg(net.delegation, {
        delegator: bob.account.address as Hex,
        delegate: randomAddress() as Hex,
        token: net.tokens.usd.address,
        budgetUnits: 1n,
        maxActions: 1,
        expiresAtSeconds: Math.floor(Date.now() / 1000) + 3600,
        salt: randomSalt()
      })
      const unknown = yield* storeBuild(bob, {
        intentType: "delegation_revoke",
        callData: stack.encodeDisableDelegation(unknownLeg),
        riskReducing: true
      })
      assert.strictEqual((yield* relay(bob.api, yield* signOp(bob.key, unknown.userOp))).outcome, "mined")
      assert.isTrue(yield* disabledOnChain(stack.permissionIdOf(unknownLeg)))

      // Alice's delegation: still active in the service and on chain, and her delegate can still act.
      const after = yield* alice.api.delegations.get({ params: { delegationId: created.id } })
      assert.strictEqual(after.status, "active")
      assert.isFalse(yield* disabledOnChain(leg.permissionId))
      const recipient = randomAddress()
      const action = yield* alice.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 2 } })
      assert.strictEqual((yield* relay(aliceDelegate.api, yield* signOp(aliceDelegate.key, action.userOp))).outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 2_000_000n)
      assert.deepStrictEqual(
        (yield* alice.api.delegations.list({ query: { status: "revoked" } })).map((d) => d.id),
        []
      )
    }))

  it.effect("a rejected revoke changes nothing; a revoke after an out-of-band disable does not revert; failed actions free their reservation", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const delegate = yield* newSession()
      yield* mint("usd", owner.account.address as Hex, 10)
      // One action in all: a failed action must give it back.
      const { created, leg } = yield* enabled(owner, delegate, { budget: 10, perAction: 5, maxActions: 1 })
      const id = created.id
      const recipient = randomAddress()
      const act = () => owner.api.delegations.act({ params: { delegationId: id }, payload: { recipient, amount: 1 } })

      // A delegated action refused by the bundler (signed with the wrong key: AA24) → released.
      const badlySigned = yield* relay(delegate.api, yield* signOp(owner.key, (yield* act()).userOp))
      assert.deepStrictEqual([badlySigned.status, badlySigned.outcome], ["failed", "rejected"])
      assert.deepStrictEqual(yield* reservationStatuses(id), ["released"])

      // e1. A revoke refused by the bundler (signed by the delegate's key): nothing changes.
      const revoke1 = yield* owner.api.delegations.revoke({ params: { delegationId: id } })
      const rejected = yield* relay(owner.api, yield* signOp(delegate.key, revoke1.userOp))
      assert.deepStrictEqual([rejected.status, rejected.outcome], ["failed", "rejected"])
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: id } })).status, "active")
      assert.isFalse(yield* disabledOnChain(leg.permissionId))

      // The owner's account disables the leg on chain behind the service's back (an operation of
      // another intent, so no revoke hook sees it): from now on the chain refuses the delegate.
      const aside = yield* storeBuild(owner, {
        intentType: "send",
        calls: [{ to: net.delegation.DelegationManager, data: dmDisable(leg.delegation as Delegation) }]
      })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, aside.userOp))).outcome, "mined")
      assert.isTrue(yield* disabledOnChain(leg.permissionId))

      // A delegated action the service allows but the chain reverts → released by the relay's
      // on-failed hook in the settlement; the one action can be built again.
      const reverted = yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act()).userOp))
      assert.deepStrictEqual([reverted.status, reverted.outcome], ["failed", "reverted"])
      // The reason in words (the DelegationManager's error by name), the raw data beside it, and on the audit entry.
      assert.include(reverted.reason ?? "", "CannotUseADisabledDelegation")
      assert.match(reverted.revertData ?? "", /^0x[0-9a-f]{8,}$/i)
      const revertedEvent = yield* delegate.api.activity.get({ params: { eventId: reverted.auditEventId! } })
      assert.include(JSON.stringify(revertedEvent), "CannotUseADisabledDelegation")
      assert.deepStrictEqual(yield* reservationStatuses(id), ["released", "released"])
      yield* act()
      assert.deepStrictEqual(yield* reservationStatuses(id), ["released", "released", "reserved"])

      // e2. The owner's revoke reads the chain (the leg is disabled): it re-enables and disables it in one
      // operation instead of reverting on AlreadyDisabled, so the delegation is revoked for good.
      const revoke2 = yield* owner.api.delegations.revoke({ params: { delegationId: id } })
      assert.isTrue(revoke2.simulation?.willSucceed)
      const revokedAfterAll = yield* relay(owner.api, yield* signOp(owner.key, revoke2.userOp))
      assert.deepStrictEqual([revokedAfterAll.status, revokedAfterAll.outcome], ["included", "mined"])
      const after = yield* owner.api.delegations.get({ params: { delegationId: id } })
      assert.strictEqual(after.status, "revoked")
      assert.deepStrictEqual(after.spentToDate.map((s) => s.spent), [0])
      assert.deepStrictEqual(yield* reservationStatuses(id), ["released", "released", "released"])
      assert.isTrue(yield* disabledOnChain(leg.permissionId))
      assert.strictEqual(yield* usdcBalance(recipient), 0n)
    }))
})
