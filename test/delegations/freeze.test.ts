/**
 * The account freeze on chain: freezing disables every live delegation in the
 * DelegationManager (so a delegate going straight to the bundler is refused too),
 * unfreezing re-enables them, and a revoke while frozen still works and stays revoked.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { disabledOnChain, dmErrorIn, enabled, newSession, relay, signOp, usdcBalance } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase()

layer(TestServerLive(), { timeout: Duration.seconds(90), excludeTestServices: true })("account freeze", (it) => {
  it.effect("freeze disables live delegations on chain, unfreeze re-enables them; a revoke while frozen stays revoked", () =>
    Effect.gen(function*() {
      const bundler = yield* Bundler
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 50)
      const first = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })
      const second = yield* enabled(owner, delegate, { budget: 10, perAction: 5, maxActions: 5 })

      // Built while active, signed by the delegate: the operation the delegate could send on its own.
      const action = yield* owner.api.delegations.act({ params: { delegationId: first.created.id }, payload: { recipient, amount: 5 } })
      const signedAction = yield* signOp(delegate.key, action.userOp)

      const freeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.include(freeze.humanSummary ?? "", "2 live delegation(s)")
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, freeze.userOp))).outcome, "mined")
      assert.isTrue(yield* disabledOnChain(first.leg.permissionId))
      assert.isTrue(yield* disabledOnChain(second.leg.permissionId))
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: first.created.id } })).status, "frozen")

      // Straight to the bundler, bypassing the service: the chain refuses the delegate.
      const estimate = yield* bundler.estimateUserOperationGas(fromWire(signedAction)).pipe(Effect.flip)
      const text = estimate._tag === "BundlerRejected" ? `${estimate.message} ${JSON.stringify(estimate.data ?? "")}` : ""
      assert.strictEqual(dmErrorIn(text), "CannotUseADisabledDelegation", text)

      // A revoke while frozen (risk-reducing, so it is built) executes and retires the delegation.
      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: second.created.id } })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: second.created.id } })).status, "revoked")

      const unfreeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
      assert.include(unfreeze.humanSummary ?? "", "1 live delegation(s)")
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, unfreeze.userOp))).outcome, "mined")
      assert.isFalse(yield* disabledOnChain(first.leg.permissionId), "the live delegation is usable again")
      assert.isTrue(yield* disabledOnChain(second.leg.permissionId), "the revoked one stays disabled")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: first.created.id } })).status, "active")

      // After the unfreeze the delegate acts again through the service.
      const again = yield* owner.api.delegations.act({ params: { delegationId: first.created.id }, payload: { recipient, amount: 5 } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, again.userOp))).outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 5_000_000n)
    }))
})
