/**
 * The bypass matrix: for every limit of a grant, the delegate crafts its own redemption
 * (the kit + viem, the signed delegation the owner gave it, its own caveat args) and sends
 * it straight to the bundler, and once bundled by itself (its own `handleOps`, its EOA as
 * beneficiary). Each attempt is refused by the chain with the enforcer's own reason, and no
 * token moves (balances read on chain). docs/onchain.md maps each limit to its case here.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect } from "effect"
import { type Address, encodeFunctionData, erc20Abi, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { balances, grant, makeAttacker, redeemBatchCall, redeemCall, refused, succeeds, transfer, withArgs } from "./attacker.ts"
import { newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second" } }), { timeout: Duration.seconds(120), excludeTestServices: true })(
  "bypass matrix",
  (it) => {
    it.effect("per-action max, a 2-entry allowlist, targets, selectors and native value hold without the service", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const enforcers = net.delegation.caveatEnforcers
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const [alice, bob, carol] = [randomAddress(), randomAddress(), randomAddress()]
        const usdc = net.tokens.usd.address
        const usdt = net.tokens.usdt.address
        yield* mint("usd", owner.account.address as Hex, 50)
        yield* mint("usdt", owner.account.address as Hex, 50)
        const g = yield* grant(owner, delegate, {
          budgets: [{ token: { symbol: "USDC" }, amount: 20 }, { token: { symbol: "USDT" }, amount: 20 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 3 },
          maxActions: 5,
          recipientAllowlist: [
            { name: "Alice", address: alice, chainId: net.chainId },
            { name: "Bob", address: bob, chainId: net.chainId }
          ]
        })
        assert.include(g.summary, "at most 3 USDC or 3 USDT per action")
        assert.include(g.summary, "the chain enforces each of these limits")
        // An allowlist the signed terms cannot carry is refused at build, never granted with less.
        const tooMany = yield* owner.api.delegations.build({
          payload: {
            name: "too many", kind: "agent", delegateeAddress: delegate.account.address, chainId: net.chainId,
            budgets: [{ token: { symbol: "USDC" }, amount: 1 }],
            recipientAllowlist: Array.from({ length: 33 }, (_, i) => ({ name: `r${i}`, address: randomAddress(), chainId: net.chainId }))
          }
        }).pipe(Effect.flip)
        assert.strictEqual(tooMany._tag, "BadRequest")
        assert.include(tooMany.message, "at most 32")
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc, usdt], holders: [owner.account.address as Address, alice, bob, carol] }
        const as = (choice: { tokenIndex: number; group?: number }) => withArgs(g.signed, enforcers, choice)

        // The crafted redemption works within the limits (and deploys the attacker's account).
        yield* succeeds(attacker, redeemCall(as({ tokenIndex: 0, group: 0 }), transfer(usdc, alice, USD(3))))

        // Over the per-action maximum, in either token.
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group: 0 }), transfer(usdc, alice, USD(3) + 1n)), "TransferCapEnforcer:amount-exceeded")
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 1, group: 1 }), transfer(usdt, bob, USD(4.04))), "TransferCapEnforcer:amount-exceeded")

        // A recipient not on the 2-entry allowlist, whichever group the attacker names.
        for (const group of [0, 1]) {
          yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group }), transfer(usdc, carol, USD(1))), "AllowedCalldataEnforcer:invalid-calldata")
        }
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group: 2 }), transfer(usdc, carol, USD(1))), "LogicalOrWrapperEnforcer:invalid-group-index")

        // A target that is not an allowed action (the delegate's own EOA), and a selector that is not transfer.
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group: 0 }), transfer(attacker.eoa.address, alice, 1n)), "AllowedTargetsEnforcer:target-address-not-allowed")
        const approve = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [attacker.eoa.address, USD(20)] })
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group: 0 }), { target: usdc, callData: approve }), "AllowedMethodsEnforcer:method-not-allowed")

        // Native value: attached to a transfer, or sent alone.
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group: 0 }), { ...transfer(usdc, alice, 1n), value: 1n }), "ValueLteEnforcer:value-too-high")
        yield* refused(attacker, watch, redeemCall(as({ tokenIndex: 0, group: 0 }), { target: alice, value: 1n, callData: "0x" }), "ValueLteEnforcer:value-too-high")

        // The service's own path on the same grant: the second token to the second recipient (the args it picks).
        const action = yield* owner.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: "Bob", amount: 2, token: "USDT" } })
        assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))).outcome, "mined")
        assert.deepStrictEqual(yield* balances(attacker, [usdc, usdt], [alice, bob]), [USD(3), 0n, 0n, USD(2)])
      }))

    it.effect("the total budget per token and the action count across tokens hold without the service", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const enforcers = net.delegation.caveatEnforcers
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const alice = randomAddress()
        const usdc = net.tokens.usd.address
        const usdt = net.tokens.usdt.address
        yield* mint("usd", owner.account.address as Hex, 50)
        yield* mint("usdt", owner.account.address as Hex, 50)
        const g = yield* grant(owner, delegate, {
          budgets: [{ token: { symbol: "USDC" }, amount: 5 }, { token: { symbol: "USDT" }, amount: 5 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 3 },
          maxActions: 3
        })
        assert.include(g.summary, "in at most 3 actions in total across all its tokens")
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc, usdt], holders: [owner.account.address as Address, alice] }
        const as = (tokenIndex: number) => withArgs(g.signed, enforcers, { tokenIndex })

        yield* succeeds(attacker, redeemCall(as(0), transfer(usdc, alice, USD(3)))) // action 1: 3 of 5 USDC
        // Over the USDC budget (3 + 3 > 5); the other token's entry does not help.
        yield* refused(attacker, watch, redeemCall(as(0), transfer(usdc, alice, USD(3))), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
        yield* refused(attacker, watch, redeemCall(as(1), transfer(usdc, alice, USD(1))), "MultiTokenPeriodEnforcer:token-mismatch")
        yield* succeeds(attacker, redeemCall(as(1), transfer(usdt, alice, USD(1)))) // action 2 (USDT)
        yield* succeeds(attacker, redeemCall(as(0), transfer(usdc, alice, USD(2)))) // action 3: USDC budget now used up
        // Two transfers in one batch redemption (to count as one action): no enforcer takes batch mode.
        const batch = [transfer(usdt, alice, USD(1)), transfer(usdt, alice, USD(1))]
        yield* refused(attacker, watch, redeemBatchCall(as(1), batch), "CaveatEnforcer:invalid-call-type")
        // The 4th action, spread to the token with budget left: the count is the grant's, across tokens.
        yield* refused(attacker, watch, redeemCall(as(1), transfer(usdt, alice, USD(1))), "LimitedCallsEnforcer:limit-exceeded")
        assert.deepStrictEqual(yield* balances(attacker, [usdc, usdt], [alice]), [USD(5), USD(1)])
      }))

    it.effect("an expired grant, a revoked grant and a frozen account refuse the delegate's own redemptions", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const enforcers = net.delegation.caveatEnforcers
        const owner = yield* newSession()
        const frozenOwner = yield* newSession()
        const delegate = yield* newSession()
        const alice = randomAddress()
        const usdc = net.tokens.usd.address
        yield* mint("usd", owner.account.address as Hex, 50)
        yield* mint("usd", frozenOwner.account.address as Hex, 50)
        const limits = { budgets: [{ token: { symbol: "USDC" }, amount: 10 }], perActionMax: { token: { symbol: "USDC" }, amount: 5 }, maxActions: 5 }
        const expiresAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 8_000)
        const short = yield* grant(owner, delegate, { ...limits, expiresAt: expiresAt.toISOString() })
        const revoked = yield* grant(owner, delegate, limits)
        const frozen = yield* grant(frozenOwner, delegate, limits)
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc], holders: [owner.account.address as Address, frozenOwner.account.address as Address, alice] }
        const call = (signed: Delegation) => redeemCall(withArgs(signed, enforcers, { tokenIndex: 0 }), transfer(usdc, alice, USD(1)))

        // Usable before: the attacker's own route works (and deploys its account).
        yield* succeeds(attacker, call(revoked.signed))

        const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: revoked.id } })
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
        yield* refused(attacker, watch, call(revoked.signed), "CannotUseADisabledDelegation")

        const freeze = yield* frozenOwner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        assert.strictEqual((yield* relay(frozenOwner.api, yield* signOp(frozenOwner.key, freeze.userOp))).outcome, "mined")
        yield* refused(attacker, watch, call(frozen.signed), "CannotUseADisabledDelegation")

        yield* Effect.sleep(Duration.millis(Math.max(0, expiresAt.getTime() - Date.now()) + 1_200))
        yield* refused(attacker, watch, call(short.signed), "TimestampEnforcer:expired-delegation")
      }))
  }
)
