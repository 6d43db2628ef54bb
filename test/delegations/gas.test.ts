/**
 * A delegate can pay its own gas in a stablecoin (`gasToken` on the action build):
 * USDT through the token paymaster: the first action batches the unlimited approve and is
 * sponsored (the paymaster pre-charges in validation, so the allowance must exist before),
 * the next pays in USDT.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { enabled, newSession, relay, signOp, usdcBalance } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(90), excludeTestServices: true })("delegated action gas", (it) => {
  it.effect("gasToken USDT: the approve is batched into a sponsored first action, the next one the delegate's USDT pays", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const chain = yield* Chain
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      yield* mint("usd", owner.account.address as Hex, 20)
      yield* mint("usdt", delegate.account.address as Hex, 50)
      const { created } = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })
      const usdtOf = chain.erc20Balance(net.tokens.usdt.address, delegate.account.address as Hex)

      const action = yield* owner.api.delegations.act({
        params: { delegationId: created.id },
        payload: { recipient, amount: 4, gasToken: "USDT" }
      })
      assert.isNotNull(action.usdtApproval)
      assert.strictEqual(action.usdtApproval!.token.toLowerCase(), net.tokens.usdt.address.toLowerCase())
      assert.isTrue(action.gasless, "the allowance's setup is sponsored")
      const usdtBefore = yield* usdtOf
      const receipt = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.strictEqual(receipt.outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 4_000_000n)
      assert.strictEqual(yield* usdtOf, usdtBefore)

      const next = yield* owner.api.delegations.act({
        params: { delegationId: created.id },
        payload: { recipient, amount: 1, gasToken: "USDT" }
      })
      assert.isNull(next.usdtApproval)
      assert.isFalse(next.gasless)
      const nextReceipt = yield* relay(delegate.api, yield* signOp(delegate.key, next.userOp))
      assert.strictEqual(nextReceipt.outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 5_000_000n)
      assert.isTrue((yield* usdtOf) < usdtBefore, "the delegate paid its gas in USDT")
    }))
})
