/**
 * A delegate can pay its own gas in a stablecoin (`gasToken` on the action build):
 * USDT through the token paymaster with the approve batched into the operation.
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
  it.effect("gasToken USDT: the approve is batched, the delegate's USDT pays, the owner's USDC moves", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const chain = yield* Chain
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      yield* mint("usd", owner.account.address as Hex, 20)
      yield* mint("usdt", delegate.account.address as Hex, 50)
      const { created } = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })

      const action = yield* owner.api.delegations.act({
        params: { delegationId: created.id },
        payload: { recipient, amount: 4, gasToken: "USDT" }
      })
      assert.isNotNull(action.usdtApproval)
      assert.strictEqual(action.usdtApproval!.token.toLowerCase(), net.tokens.usdt.address.toLowerCase())
      assert.isFalse(action.gasless)
      const usdtBefore = yield* chain.erc20Balance(net.tokens.usdt.address, delegate.account.address as Hex)
      const receipt = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.strictEqual(receipt.outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 4_000_000n)
      const usdtAfter = yield* chain.erc20Balance(net.tokens.usdt.address, delegate.account.address as Hex)
      assert.isTrue(usdtAfter < usdtBefore, "the delegate paid its gas in USDT")
    }))
})
