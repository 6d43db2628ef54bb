/**
 * A stream budget without the service (issue 24, item 2): the delegate's own redemptions (kit +
 * viem, its own caveat args), straight to the bundler and through its own `handleOps`, beyond
 * what has accrued, in a batch, on another token; each refused by the chain with the enforcer's
 * reason, balances unchanged on chain. `spentToDate` reads the streaming enforcer's `spent`, and
 * the service declines what the chain would refuse (`stream_exceeded`).
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { balances, grant, makeAttacker, redeemBatchCall, redeemCall, refused, succeeds, transfer } from "./attacker.ts"
import { failure, newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("a stream budget", (it) => {
  it.effect("holds without the service: what has not accrued, a batch, another token are refused by ERC20StreamingEnforcer", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const alice = randomAddress()
      const [usdc, usdt] = [net.tokens.usd.address, net.tokens.usdt.address]
      yield* mint("usd", owner.account.address as Hex, 50)
      yield* mint("usdt", owner.account.address as Hex, 50)
      // 3 USDC at once, then 0.000001 USDC per second, at most 10; at most 2 USDC per action.
      const g = yield* grant(owner, delegate, {
        budgets: [{ token: { symbol: "USDC" }, amount: 10, stream: { perSecond: 0.000001, initial: 3 } }],
        perActionMax: { token: { symbol: "USDC" }, amount: 2 },
        maxActions: 10
      })
      assert.include(g.summary, "at most 10 USDC in total as a stream (3 USDC at once, then 0.000001 USDC per second")
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const watch = { tokens: [usdc, usdt], holders: [owner.account.address as Address, alice] }

      yield* succeeds(attacker, redeemCall(g.signed, transfer(usdc, alice, USD(2))))
      // 1 USDC left of what has accrued (plus a few millionths a second): 1.5 is refused, whichever route.
      yield* refused(attacker, watch, redeemCall(g.signed, transfer(usdc, alice, USD(1.5))), "ERC20StreamingEnforcer:allowance-exceeded")
      // Two transfers in one batch redemption, and a transfer of a token the stream does not cover.
      yield* refused(attacker, watch, redeemBatchCall(g.signed, [transfer(usdc, alice, 1n), transfer(usdc, alice, 1n)]), "CaveatEnforcer:invalid-call-type")
      yield* refused(attacker, watch, redeemCall(g.signed, transfer(usdt, alice, 1n)), "AllowedTargetsEnforcer:target-address-not-allowed")
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(2)])

      // The service reads the enforcer's state: 2 spent, about 1 left, and declines 1.5 as the chain would.
      const seen = (yield* owner.api.delegations.get({ params: { delegationId: g.id } })).spentToDate[0]!
      assert.strictEqual(seen.spent, 2)
      assert.isAtLeast(seen.remaining, 1)
      assert.isBelow(seen.remaining, 1.01)
      const over = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 1.5 } }))
      assert.strictEqual(over.reason, "stream_exceeded")
      // Within what has accrued, the service's own route works.
      const action = yield* delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 0.5 } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))).outcome, "mined")
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(2.5)])
    }))
})
