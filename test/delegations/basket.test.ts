/**
 * Basket budgets (issue 44 item 1): one USD budget across USDC, USDT and DAI, held on chain by
 * BasketPeriodEnforcer. The delegate goes around the service (its own redemption, straight to
 * the bundler and through its own `handleOps`) and the chain refuses what the basket does not
 * allow; the service refuses it first; tokens of 6 and 18 decimals count 1:1; the basket renews
 * with its period; a bad basket is a 400 that builds nothing.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, type Hex, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { signIn } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { balances, grant, makeAttacker, redeemCall, refused, succeeds, transfer, withArgs } from "./attacker.ts"
import { failure, newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const six = (n: string) => parseUnits(n, 6)
const eighteen = (n: string) => parseUnits(n, 18)
const BASKET_REFUSAL = "BasketPeriodEnforcer:basket-amount-exceeded"

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second" } }), { timeout: Duration.seconds(180), excludeTestServices: true })(
  "basket budgets",
  (it) => {
    it.effect("USDC then USDT then DAI past the basket: the service declines, the chain refuses the delegate's own redemption; 6 and 18 decimals count 1:1", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const alice = randomAddress()
        const [usdc, usdt, dai] = [net.tokens.usd.address, net.tokens.usdt.address, net.tokens.dai!.address]
        const holder = owner.account.address as Hex
        yield* mint("usd", holder, 20)
        yield* mint("usdt", holder, 20)
        yield* mint("dai", holder, 20)
        // 10 of each token on its own, 10 USD across the three together.
        const g = yield* grant(owner, delegate, {
          budgets: [{ token: { symbol: "USDC" }, amount: 10 }, { token: { symbol: "USDT" }, amount: 10 }, { token: { symbol: "DAI" }, amount: 10 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 10 },
          maxActions: 10,
          basket: { amount: 10 }
        })
        assert.include(g.summary, "at most 10 USDC, 10 USDT and 10 DAI in total")
        assert.include(g.summary, "Across USDC, USDT and DAI together it may spend at most 10 USD in total, each token counted 1:1 as USD by its decimals (USDC 6, USDT 6, DAI 18)")
        const read = yield* owner.api.delegations.get({ params: { delegationId: g.id } })
        assert.deepStrictEqual(read.policySet.basket?.amount, 10)
        assert.deepStrictEqual(read.policySet.basket?.tokens.map((t) => t.symbol), ["USDC", "USDT", "DAI"])

        // Through the service: 4 USDC, then 3 USDT; 4 DAI would be 11 USD, declined before the chain sees it.
        const act = (amount: number, token: string) => owner.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount, token } })
        assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act(4, "USDC")).userOp))).outcome, "mined")
        assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, (yield* act(3, "USDT")).userOp))).outcome, "mined")
        const basketOf = () => Effect.map(owner.api.delegations.get({ params: { delegationId: g.id } }), (d) => d.basketToDate)
        assert.deepStrictEqual(yield* basketOf(), { unit: "USD", limit: 10, spent: 7, remaining: 3, reserved: 0 })
        const over = yield* failure(act(4, "DAI"))
        assert.deepStrictEqual([over.tag, over.reason], ["OutOfScope", "cap_exceeded"])
        assert.include(over.message, "basket budget across USDC, USDT, DAI (3 of 10 USD)")

        // Around the service: 3 DAI and one wei is past the basket (DAI's own budget of 10 would allow it).
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc, usdt, dai], holders: [holder as Address, alice] }
        const own = (tokenIndex: number, token: Address, units: bigint) =>
          redeemCall(withArgs(g.signed, net.delegation.caveatEnforcers, { tokenIndex }), transfer(token, alice, units))
        yield* refused(attacker, watch, own(2, dai, eighteen("3") + 1n), BASKET_REFUSAL)
        // Exactly 3 DAI (18 decimals) ends the basket at 10 USD: 4 + 3 + 3.
        yield* succeeds(attacker, own(2, dai, eighteen("3")))
        assert.deepStrictEqual(yield* balances(attacker, [usdc, usdt, dai], [alice]), [six("4"), six("3"), eighteen("3")])
        // The redemption around the service counts, read from the chain.
        assert.deepStrictEqual(yield* basketOf(), { unit: "USD", limit: 10, spent: 10, remaining: 0, reserved: 0 })
        // Nothing is left in any token: one base unit of USDC is refused by the basket, by the chain and by the service.
        yield* refused(attacker, watch, own(0, usdc, 1n), BASKET_REFUSAL)
        assert.strictEqual((yield* failure(act(0.000001, "USDC"))).reason, "cap_exceeded")

        // A token outside the grant (and its basket) is refused on chain too.
        const stranger = randomAddress()
        yield* refused(attacker, watch, own(0, stranger, 1n), "AllowedTargetsEnforcer:target-address-not-allowed")
      }))

    it.effect("the basket renews with its period; its own redemption refused within one, allowed in the next", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const alice = randomAddress()
        const [usdc, dai] = [net.tokens.usd.address, net.tokens.dai!.address]
        const holder = owner.account.address as Hex
        yield* mint("usd", holder, 10)
        yield* mint("dai", holder, 10)
        const seconds = 15
        const start = new Date(Math.floor(Date.now() / 1000) * 1000)
        const period = { seconds, start: start.toISOString() }
        const g = yield* grant(owner, delegate, {
          budgets: [{ token: { symbol: "USDC" }, amount: 2, period }, { token: { symbol: "DAI" }, amount: 2, period }],
          perActionMax: { token: { symbol: "USDC" }, amount: 2 },
          maxActions: 10,
          expiresAt: new Date(start.getTime() + 120_000).toISOString(),
          basket: { amount: 2 }
        })
        assert.include(g.summary, `Across USDC and DAI together it may spend at most 2 USD per ${seconds} seconds (periods of ${seconds} s from`)
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc, dai], holders: [holder as Address, alice] }
        const own = (tokenIndex: number, token: Address, units: bigint) =>
          redeemCall(withArgs(g.signed, net.delegation.caveatEnforcers, { tokenIndex }), transfer(token, alice, units))
        // A whole period needed for the two steps below: wait for a fresh one if this one is half gone.
        const elapsed = (Date.now() - start.getTime()) % (seconds * 1000)
        if (elapsed > 5_000) yield* Effect.sleep(Duration.millis(seconds * 1000 - elapsed + 500))
        yield* succeeds(attacker, own(0, usdc, six("2")))
        yield* refused(attacker, watch, own(1, dai, 1n), BASKET_REFUSAL)
        const over = yield* failure(owner.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 1, token: "DAI" } }))
        assert.deepStrictEqual([over.tag, over.reason], ["OutOfScope", "period_exceeded"])
        const resetsAt = over.details["resetsAt"] as string
        assert.include(over.message, resetsAt)
        const used = (yield* owner.api.delegations.get({ params: { delegationId: g.id } })).basketToDate
        assert.deepStrictEqual([used?.spent, used?.remaining, used?.resetsAt], [2, 0, resetsAt])

        // The next period: the basket's allowance is back, spent in the other token.
        yield* Effect.sleep(Duration.millis(Math.max(0, new Date(resetsAt).getTime() - Date.now()) + 1_000))
        // The bundler simulates at the latest block: a transaction of our own (a mint) makes one in the new period.
        yield* mint("usd", holder, 1)
        yield* succeeds(attacker, own(1, dai, eighteen("2")))
        assert.deepStrictEqual(yield* balances(attacker, [usdc, dai], [alice]), [six("2"), eighteen("2")])
      }))

    it.effect("a basket the chain could not hold is a 400 naming the field, and builds nothing", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const before = yield* owner.api.delegations.list({ query: {} })
        const build = (payload: Record<string, unknown>) =>
          failure(owner.api.delegations.build({
            payload: { name: "b", kind: "agent", delegateeAddress: delegate.account.address, chainId: net.chainId, maxActions: 3, ...payload } as never
          }))
        const usd = (symbol: string, amount: number, extra: object = {}) => ({ token: { symbol }, amount, ...extra })
        const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
          [{ budgets: [usd("USDC", 5, { period: { seconds: 60 } }), usd("DAI", 5)], basket: { amount: 5 } }, "same period"],
          [{ budgets: [usd("ETH", 1)], basket: { amount: 1 } }, "ETH budget"],
          [{ budgets: [usd("USDC", 5, { stream: { perSecond: 0.01 } })], basket: { amount: 5 } }, "not streams"],
          [{ budgets: [usd("USDC", 5)], basket: { amount: 0.0000000000000000001 } }, "at most 18 decimals"]
        ]
        for (const [payload, words] of cases) {
          const refusal = yield* build(payload)
          assert.strictEqual(refusal.tag, "BadRequest", words)
          assert.include(refusal.message, words)
          assert.strictEqual(refusal.details["field"], "basket", words)
        }
        // Not a basket at all, straight over HTTP (the typed client would refuse to send them): the schema's 400 naming it.
        const { baseUrl } = yield* TestServer
        const token = (yield* signIn(baseUrl, privateKeyToAccount(owner.key))).token
        for (const basket of [{ amount: 5, unit: "EUR" }, { amount: 0 }, { amount: -1 }, { amount: "5" }]) {
          const res = yield* Effect.promise(async () => {
            const r = await fetch(`${baseUrl}/delegations/build`, {
              method: "POST",
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
              body: JSON.stringify({
                name: "b", kind: "agent", delegateeAddress: delegate.account.address, chainId: net.chainId, budgets: [usd("USDC", 5)], basket
              })
            })
            return { status: r.status, body: (await r.json()) as { error: { code: string; details?: { issues?: Array<{ path: string }> } } } }
          })
          assert.strictEqual(res.status, 400, JSON.stringify(basket))
          assert.strictEqual(res.body.error.code, "bad_request")
          assert.isTrue((res.body.error.details?.issues ?? []).some((i) => i.path.startsWith("body.basket")), JSON.stringify(res.body))
        }
        assert.deepStrictEqual(yield* owner.api.delegations.list({ query: {} }), before, "nothing was built into a grant")
      }))
  }
)
