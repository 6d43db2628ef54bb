/**
 * Allowances that renew (issue 15 item 2) and spend read from the chain (issue 12 item 3):
 * - a budget with a period: said in the summary, enforced on chain per period
 *   (MultiTokenPeriodEnforcer), `spentToDate` shows the current period (spent, remaining,
 *   reset time), an action over the period's allowance is declined `period_exceeded` with
 *   the next period start, the delegate's own redemption is refused by the chain, and the
 *   next period renews; a period that does not fit the expiry is a 400;
 * - redemptions that went around the service count: `spentToDate` and the action checks
 *   read the enforcers' state, so the service never grants what the chain would refuse.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { balances, grant, makeAttacker, redeemCall, refused, succeeds, transfer, withArgs } from "./attacker.ts"
import { failure, newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const PERIOD_SECONDS = 15

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second" } }), { timeout: Duration.seconds(120), excludeTestServices: true })(
  "renewing allowances and spend from the chain",
  (it) => {
    it.effect("a period budget: summary, per-period decline with the reset time, the chain refuses the delegate, the next period renews", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const alice = randomAddress()
        const usdc = net.tokens.usd.address
        yield* mint("usd", owner.account.address as Hex, 50)
        const build = (period: Record<string, unknown>, expiresInMs: number) =>
          owner.api.delegations.build({
            payload: {
              name: "p", kind: "agent", delegateeAddress: delegate.account.address, chainId: net.chainId,
              budgets: [{ token: { symbol: "USDC" }, amount: 2, period }],
              expiresAt: new Date(Date.now() + expiresInMs).toISOString()
            }
          }).pipe(Effect.flip)
        // Bad periods: longer than the grant's life, both or neither of every/seconds.
        const tooLong = yield* build({ every: "day" }, 3_600_000)
        assert.deepStrictEqual([tooLong._tag, tooLong.message.includes("does not fit")], ["BadRequest", true])
        assert.strictEqual((yield* build({ every: "day", seconds: 60 }, 3 * 86_400_000))._tag, "BadRequest")
        assert.strictEqual((yield* build({}, 3 * 86_400_000))._tag, "BadRequest")

        const start = new Date(Math.floor(Date.now() / 1000) * 1000)
        const g = yield* grant(owner, delegate, {
          budgets: [{ token: { symbol: "USDC" }, amount: 2, period: { seconds: PERIOD_SECONDS, start: start.toISOString() } }],
          maxActions: 10,
          expiresAt: new Date(start.getTime() + 120_000).toISOString()
        })
        assert.include(g.summary, `at most 2 USDC per ${PERIOD_SECONDS} seconds (periods of ${PERIOD_SECONDS} s from`)
        const firstEnd = new Date(start.getTime() + PERIOD_SECONDS * 1000).toISOString()

        // The allowance spent through the service.
        const act = (amount: number) => owner.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount } })
        assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act(2)).userOp))).outcome, "mined")
        const read = yield* owner.api.delegations.get({ params: { delegationId: g.id } })
        assert.deepStrictEqual(read.spentToDate.map((s) => [s.limit, s.spent, s.remaining, s.periodStart, s.resetsAt]), [[2, 2, 0, start.toISOString(), firstEnd]])
        assert.deepStrictEqual(read.policySet.budgets[0]!.period, { every: "seconds", seconds: PERIOD_SECONDS, start: start.toISOString() })

        // Over the period's allowance: declined with its own reason and the next period's start.
        const over = yield* failure(act(1))
        assert.deepStrictEqual([over.tag, over.reason, over.details["resetsAt"]], ["OutOfScope", "period_exceeded", firstEnd])
        assert.include(over.message, firstEnd)

        // The delegate's own redemption is refused by the chain, both routes.
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc], holders: [owner.account.address as Address, alice] }
        const own = redeemCall(withArgs(g.signed, net.delegation.caveatEnforcers, { tokenIndex: 0 }), transfer(usdc, alice, USD(1)))
        yield* refused(attacker, watch, own, "MultiTokenPeriodEnforcer:transfer-amount-exceeded")

        // The next period: the allowance is back, on chain and in the service.
        yield* Effect.sleep(Duration.millis(Math.max(0, new Date(firstEnd).getTime() - Date.now()) + 1_000))
        const renewed = yield* owner.api.delegations.get({ params: { delegationId: g.id } })
        assert.deepStrictEqual(renewed.spentToDate.map((s) => [s.spent, s.remaining, s.periodStart]), [[0, 2, firstEnd]])
        assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act(1)).userOp))).outcome, "mined")
        yield* succeeds(attacker, own)
        assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(4)])
        const spent = yield* owner.api.delegations.get({ params: { delegationId: g.id } })
        assert.deepStrictEqual(spent.spentToDate.map((s) => [s.spent, s.remaining]), [[2, 0]], "the delegate's own redemption counts too")
      }))

    it.effect("redemptions around the service count: spentToDate and the action checks read the enforcers", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const alice = randomAddress()
        const usdc = net.tokens.usd.address
        yield* mint("usd", owner.account.address as Hex, 50)
        const g = yield* grant(owner, delegate, { budgets: [{ token: { symbol: "USDC" }, amount: 5 }], maxActions: 3 })
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const own = (units: bigint) => redeemCall(withArgs(g.signed, net.delegation.caveatEnforcers, { tokenIndex: 0 }), transfer(usdc, alice, units))
        const act = (amount: number) => owner.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount } })
        const spent = () => Effect.map(owner.api.delegations.get({ params: { delegationId: g.id } }), (d) => d.spentToDate.map((s) => [s.spent, s.remaining]))

        yield* succeeds(attacker, own(USD(3))) // around the service
        assert.deepStrictEqual(yield* spent(), [[3, 2]])
        assert.strictEqual((yield* failure(act(3))).reason, "cap_exceeded", "not granted: the chain would refuse it")
        yield* succeeds(attacker, own(USD(1))) // 2 actions used on chain
        assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act(1)).userOp))).outcome, "mined")
        assert.deepStrictEqual(yield* spent(), [[5, 0]])
        assert.strictEqual((yield* failure(act(0.5))).reason, "count_exhausted", "the chain's count (3 of 3) holds in the service")
      }))
  }
)
