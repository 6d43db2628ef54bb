/**
 * Withdraw to safety through the service, on the local chain: the owner registers a safe
 * address (held by the Recovery contract, read back from the chain), then one risk-reducing,
 * sponsored operation moves every token and the ETH there and freezes the account in the same
 * operation (its live grant disabled on chain: the delegate's own operation, straight to the
 * bundler, is refused). While frozen, nothing else can be sent, the safe address cannot be
 * changed, and withdraw-to-safety still works. The same signed operation relayed twice at
 * once is one operation.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, parseEther } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { fromWire } from "../../src/builds/Wire.ts"
import { fundEth } from "../support/OwnerOps.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { disabledOnChain, dmErrorIn, enabled, failure, newSession, signOp, usdcBalance } from "../delegations/helpers.ts"
import { relayOp, run, signed } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

layer(TestServerLive(), { timeout: Duration.seconds(150), excludeTestServices: true })("withdraw to safety", (it) => {
  it.effect("one sponsored operation moves everything to the safe address and freezes; while frozen only risk-reducing ones", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const chain = yield* Chain
      const bundler = yield* Bundler
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const eoa = { kind: "eoa" as const, key: owner.key }
      const A = owner.account.address as Address
      const safe = randomAddress()

      // No safe address yet: nothing to withdraw to.
      const none = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "send", withdrawToSafety: true } }))
      assert.strictEqual(none.tag, "Conflict")

      // The safe address, registered by an owner operation, read back from the chain.
      const register = yield* owner.api.accounts.buildRules({ payload: { intentType: "rules_update", change: { kind: "safe_address", address: safe } } })
      assert.isFalse(register.riskReducing)
      assert.strictEqual((yield* run(owner.api, register, eoa)).outcome, "mined")
      assert.strictEqual((yield* owner.api.accounts.getRules({ query: {} })).safeAddress, safe)

      // Funds, and a live grant the delegate could act on.
      yield* mint("usd", A, 40)
      yield* mint("usdt", A, 3)
      yield* fundEth(A, "0.25")
      const grant = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: grant.created.id }, payload: { recipient: randomAddress(), amount: 5 } })
      const delegateOwn = yield* signOp(delegate.key, action.userOp)

      const withdraw = yield* owner.api.accounts.buildRules({ payload: { intentType: "send", withdrawToSafety: true, gasToken: "USDC" } })
      assert.isTrue(withdraw.riskReducing)
      assert.isTrue(withdraw.gasless, "sponsored, whatever gas token was asked")
      assert.include(withdraw.humanSummary ?? "", "freeze the account")
      assert.include(withdraw.humanSummary ?? "", "40 USDC")
      assert.isTrue(withdraw.simulation!.willSucceed, JSON.stringify(withdraw.simulation))

      // Relayed twice at once: one operation.
      const op = yield* signed(withdraw, eoa)
      const [r1, r2] = yield* Effect.all([relayOp(owner.api, op), relayOp(owner.api, op)], { concurrency: 2 })
      assert.strictEqual(r1.userOpId, r2.userOpId)
      assert.strictEqual(r1.outcome, "mined")

      // What the chain shows: everything at the safe address, the grant disabled.
      assert.strictEqual(yield* usdcBalance(A), 0n)
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usdt.address, A), 0n)
      assert.strictEqual(yield* chain.nativeBalance(A), 0n)
      assert.strictEqual(yield* usdcBalance(safe), 40_000_000n)
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usdt.address, safe), 3_000_000n)
      assert.strictEqual(yield* chain.nativeBalance(safe), parseEther("0.25"))
      assert.isTrue(yield* disabledOnChain(grant.leg.permissionId))
      const rules = yield* owner.api.accounts.getRules({ query: {} })
      assert.isTrue(rules.frozen)
      assert.deepStrictEqual(rules.buildableIntents, ["account_unfreeze", "send", "rules_update"])

      // The delegate, going around the service: the chain refuses it.
      const estimate = yield* bundler.estimateUserOperationGas(fromWire(delegateOwn)).pipe(Effect.flip)
      const text = estimate._tag === "BundlerRejected" ? `${estimate.message} ${JSON.stringify(estimate.data ?? "")}` : ""
      assert.strictEqual(dmErrorIn(text), "CannotUseADisabledDelegation", text)

      // Frozen: no send, no new safe address; withdraw-to-safety still (it does not freeze again).
      const send = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "send", to: randomAddress(), token: "USDC", amount: 1 } }))
      assert.strictEqual(send.reason, "account_frozen")
      const moveSafe = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "rules_update", change: { kind: "safe_address", address: randomAddress() } } }))
      assert.strictEqual(moveSafe.reason, "account_frozen")
      yield* mint("usd", A, 2)
      const again = yield* owner.api.accounts.buildRules({ payload: { intentType: "send", withdrawToSafety: true, tokens: ["USDC"] } })
      assert.notInclude(again.humanSummary ?? "", "freeze")
      assert.strictEqual((yield* run(owner.api, again, eoa)).outcome, "mined")
      assert.strictEqual(yield* usdcBalance(safe), 42_000_000n)

      // Unfrozen, the grant is live again.
      const unfreeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
      assert.strictEqual((yield* run(owner.api, unfreeze, eoa)).outcome, "mined")
      assert.isFalse(yield* disabledOnChain(grant.leg.permissionId))
    }))
})
