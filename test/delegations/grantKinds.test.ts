/**
 * Who may redeem, streams and native-coin budgets, as pure functions (Policy.ts, Grant.ts,
 * Redeemers.ts, Streams.ts): the caveats each becomes, their terms, the refusals (a 400 at build,
 * never a grant that enforces less), the summary's words and the service's own declines. The chain
 * side of each: test/permissions/kit.test.ts and test/delegations/streams.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { decodeRedeemerTerms } from "@metamask/delegation-core"
import { type Address, type Hex, hexToBigInt, slice } from "viem"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import { grantTermsOf, makeGrant } from "../../src/delegations/Grant.ts"
import { NATIVE_ADDRESS, nativeToken } from "../../src/tokens/Native.ts"
import { evaluate, makePolicySet, type PolicyInput } from "../../src/delegations/Policy.ts"
import { ANY_DELEGATE, delegateProblem } from "../../src/delegations/Redeemers.ts"
import { accruesBy, unlockedAt } from "../../src/delegations/Streams.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryOf } from "./summaryOf.ts"

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address
const names = ["TimestampEnforcer", "RedeemerEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer",
  "AllowedCalldataEnforcer", "LogicalOrWrapperEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer",
  "ERC20StreamingEnforcer", "ExactCalldataEnforcer", "NativeTokenPeriodTransferEnforcer", "NativeTokenStreamingEnforcer"]
const environment = (without: ReadonlyArray<string> = []): DelegationEnvironment => ({
  DelegationManager: addr(1),
  EntryPoint: addr(2),
  SimpleFactory: addr(3),
  implementations: {},
  caveatEnforcers: Object.fromEntries(names.filter((n) => !without.includes(n)).map((n) => [n, addr(0x100 + names.indexOf(n))]))
})
const nameOf = (env: DelegationEnvironment, enforcer: string) =>
  Object.entries(env.caveatEnforcers).find(([, a]) => a.toLowerCase() === enforcer.toLowerCase())?.[0]

const USDC: Token = { chainId: 31337, symbol: "USDC", name: "USD Coin", address: addr(0xa1).toLowerCase(), decimals: 6 }
const USDT: Token = { chainId: 31337, symbol: "USDT", name: "Tether", address: addr(0xa2).toLowerCase(), decimals: 6 }
const ETH = nativeToken(31337)
const now = new Date("2026-01-01T00:00:00.000Z")
const nowSeconds = now.getTime() / 1000
const delegate = addr(0xd2)
const parties = { delegator: addr(0xd1), delegate, salt: "0x01" as Hex }

const policyOf = (input: Omit<PolicyInput, "chainId">, tokens: ReadonlyArray<Token>) => makePolicySet({ chainId: 31337, ...input }, tokens, now)
const okPolicy = (input: Omit<PolicyInput, "chainId">, tokens: ReadonlyArray<Token>) => {
  const r = policyOf(input, tokens)
  if (r._tag !== "Ok") throw new Error(r.message)
  return r.policy
}
const grantOf = (input: Omit<PolicyInput, "chainId">, tokens: ReadonlyArray<Token>, env = environment()) => {
  const g = makeGrant(env, grantTermsOf(okPolicy(input, tokens), (a) => a === NATIVE_ADDRESS ? 18 : 6, parties, now)!)
  return g
}
const caveatsOf = (input: Omit<PolicyInput, "chainId">, tokens: ReadonlyArray<Token>, env = environment()) => {
  const g = grantOf(input, tokens, env)
  if (g._tag !== "Ok") throw new Error(g.message)
  return g.delegation.caveats.map((c) => ({ name: nameOf(env, c.enforcer)!, terms: c.terms as Hex }))
}
const usdc = (amount: number) => ({ token: { symbol: "USDC" }, amount })
const word = (terms: Hex, at: number) => hexToBigInt(slice(terms, at, at + 32))
const refusal = (r: ReturnType<typeof policyOf>) => r._tag === "Invalid" ? r.message : "(accepted)"

describe("who may redeem", () => {
  it("by default only the delegate: RedeemerEnforcer right after the expiry, listing the delegate", () => {
    const caveats = caveatsOf({ budgets: [usdc(10)] }, [USDC])
    assert.deepStrictEqual(caveats.slice(0, 2).map((c) => c.name), ["TimestampEnforcer", "RedeemerEnforcer"])
    assert.deepStrictEqual(decodeRedeemerTerms(caveats[1]!.terms).redeemers.map((a) => a.toLowerCase()), [delegate])
    assert.deepStrictEqual(okPolicy({ budgets: [usdc(10)] }, [USDC]).redeemers, { mode: "delegate", addresses: [] })
  })

  it("named redeemers join the delegate (once each); redelegation carries no redeemer caveat", () => {
    const facilitator = addr(0xfa)
    const named = caveatsOf({ budgets: [usdc(10)], redeemers: { mode: "named", addresses: [facilitator, delegate] } }, [USDC])
    const terms = named.find((c) => c.name === "RedeemerEnforcer")!.terms
    assert.deepStrictEqual(decodeRedeemerTerms(terms).redeemers.map((a) => a.toLowerCase()), [delegate, facilitator])
    const open = caveatsOf({ budgets: [usdc(10)], redeemers: { mode: "redelegation" } }, [USDC])
    assert.isFalse(open.some((c) => c.name === "RedeemerEnforcer"))
  })

  it("the summary says which", () => {
    const words = (redeemers: PolicyInput["redeemers"]) =>
      summaryOf(okPolicy({ budgets: [usdc(10)], ...(redeemers === undefined ? {} : { redeemers }) }, [USDC]), delegate, [USDC])
    assert.include(words(undefined), "Only the delegate itself may redeem it: a delegation it passes on to anyone else is refused on chain.")
    assert.include(words({ mode: "named", addresses: [addr(0xfa)] }), `Only the delegate and ${addr(0xfa)} may redeem it`)
    assert.include(words({ mode: "redelegation" }), "anyone it delegates to may redeem it, within these limits")
  })

  it("refusals: named without addresses, addresses without named, the zero address, duplicates, too many, no enforcer", () => {
    const r = (redeemers: PolicyInput["redeemers"]) => refusal(policyOf({ budgets: [usdc(1)], ...(redeemers === undefined ? {} : { redeemers }) }, [USDC]))
    assert.include(r({ mode: "named", addresses: [] }), "at least one redeemer")
    assert.include(r({ mode: "delegate", addresses: [addr(5)] }), `only for mode "named"`)
    assert.include(r({ mode: "named", addresses: [addr(0)] }), "not an address that can redeem")
    assert.include(r({ mode: "named", addresses: [addr(5), addr(5)] }), "twice")
    assert.include(r({ mode: "named", addresses: Array.from({ length: 17 }, (_, i) => addr(0x500 + i)) }), "at most 16")
    const g = grantOf({ budgets: [usdc(1)] }, [USDC], environment(["RedeemerEnforcer"]))
    assert.include(g._tag === "Invalid" ? g.message : "", "RedeemerEnforcer")
    assert.strictEqual(grantOf({ budgets: [usdc(1)], redeemers: { mode: "redelegation" } }, [USDC], environment(["RedeemerEnforcer"]))._tag, "Ok")
  })
})

describe("any delegate that can redeem, none that cannot", () => {
  const contracts = [{ name: "DelegationManager", address: addr(1) }, { name: "token USDC", address: USDC.address }]
  it("an EOA or any smart account is fine; the zero address, 'any delegate', the account itself and the deployment's contracts are not", () => {
    assert.isUndefined(delegateProblem(addr(0xd2), addr(0xd1), contracts))
    assert.include(delegateProblem(addr(0), addr(0xd1), contracts)!, "zero address")
    assert.include(delegateProblem(ANY_DELEGATE, addr(0xd1), contracts)!, "any delegate")
    assert.include(delegateProblem(addr(0xd1).toUpperCase().replace("0X", "0x"), addr(0xd1), contracts)!, "granting account itself")
    assert.include(delegateProblem(addr(1), addr(0xd1), contracts)!, "DelegationManager")
    assert.include(delegateProblem(USDC.address, addr(0xd1), contracts)!, "token USDC")
  })
})

describe("streams", () => {
  const stream = { budgets: [{ ...usdc(10), stream: { perSecond: 0.5, initial: 2, start: "2026-01-01T00:00:10.000Z" } }] }

  it("ERC20StreamingEnforcer holds it instead of MultiTokenPeriod: token, initial, maximum, rate, start", () => {
    const caveats = caveatsOf(stream, [USDC])
    assert.deepStrictEqual(caveats.map((c) => c.name), ["TimestampEnforcer", "RedeemerEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer",
      "AllowedMethodsEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer", "ERC20StreamingEnforcer"])
    const terms = caveats.at(-1)!.terms
    assert.strictEqual(slice(terms, 0, 20), USDC.address)
    assert.deepStrictEqual([20, 52, 84, 116].map((at) => word(terms, at)), [2_000_000n, 10_000_000n, 500_000n, BigInt(nowSeconds + 10)])
  })

  it("what has accrued, when enough will have, and the service's decline before the chain's", () => {
    const units = { initial: 2_000_000n, perSecond: 500_000n, max: 10_000_000n, startSeconds: nowSeconds + 10 }
    assert.strictEqual(unlockedAt(units, nowSeconds), 0n)
    assert.strictEqual(unlockedAt(units, nowSeconds + 10), 2_000_000n)
    assert.strictEqual(unlockedAt(units, nowSeconds + 14), 4_000_000n)
    assert.strictEqual(unlockedAt(units, nowSeconds + 1000), 10_000_000n)
    assert.strictEqual(accruesBy(units, 3_000_001n), nowSeconds + 13)
    assert.isUndefined(accruesBy(units, 10_000_001n))
    const p = okPolicy(stream, [USDC])
    const at = new Date((nowSeconds + 14) * 1000)
    const state = (spent: bigint) => ({ status: "active" as const, accountFrozen: false, usedUnits: new Map([[USDC.address, spent]]), actionsUsed: 0 })
    assert.strictEqual(evaluate(p, () => 6, state(1_000_000n), { recipient: addr(0xb0), amount: 3 }, at)._tag, "Allowed")
    const over = evaluate(p, () => 6, state(1_000_000n), { recipient: addr(0xb0), amount: 3.5 }, at)
    assert.strictEqual(over._tag === "Declined" ? over.reason : over._tag, "stream_exceeded")
    assert.strictEqual(over._tag === "Declined" ? over.resetsAt : "", new Date((nowSeconds + 15) * 1000).toISOString())
    const never = evaluate(p, () => 6, state(8_000_000n), { recipient: addr(0xb0), amount: 2.5 }, new Date((nowSeconds + 1000) * 1000))
    assert.include(never._tag === "Declined" ? never.message : "", "maximum does not allow it")
  })

  it("the summary states the stream", () => {
    assert.include(summaryOf(okPolicy(stream, [USDC]), delegate, [USDC]),
      "at most 10 USDC in total as a stream (2 USDC at once, then 0.5 USDC per second from 2026-01-01 00:00:10 UTC; what has not accrued cannot be spent)")
  })

  it("refusals: another budget beside it, a period too, no rate, an initial amount at the maximum, a start after expiry, no enforcer", () => {
    const s = (extra: object) => ({ budgets: [{ ...usdc(10), stream: { perSecond: 1, ...extra } }] })
    assert.include(refusal(policyOf({ budgets: [{ ...usdc(10), stream: { perSecond: 1 } }, { token: { symbol: "USDT" }, amount: 1 }] }, [USDC, USDT])), "only budget")
    assert.include(refusal(policyOf({ budgets: [{ ...usdc(10), stream: { perSecond: 1 }, period: { every: "day" } }] }, [USDC])), "not both")
    assert.include(refusal(policyOf({ budgets: [{ ...usdc(10), stream: { perSecond: 0 } }] }, [USDC])), "positive perSecond")
    assert.include(refusal(policyOf({ budgets: [{ ...usdc(10), stream: { perSecond: 0.0000001 } }] }, [USDC])), "at most 6 decimals")
    assert.include(refusal(policyOf(s({ initial: 10 }), [USDC])), "below its maximum")
    assert.include(refusal(policyOf({ ...s({ start: "2026-03-01T00:00:00Z" }), expiresAt: "2026-02-01T00:00:00Z" }, [USDC])), "starts at or after the grant expires")
    const g = grantOf(stream, [USDC], environment(["ERC20StreamingEnforcer"]))
    assert.include(g._tag === "Invalid" ? g.message : "", "ERC20StreamingEnforcer")
  })
})

describe("native-coin budgets", () => {
  const eth = (extra: object = {}) => ({ budgets: [{ token: { symbol: "ETH" }, amount: 0.5, ...extra }], perActionMax: { token: { symbol: "ETH" }, amount: 0.1 } })

  it("one value transfer per action: no call data, the allowlist as targets, the per-action cap as value", () => {
    const caveats = caveatsOf({ ...eth(), recipientAllowlist: [{ name: "Alice", address: addr(0xa11ce), chainId: 31337 }] }, [ETH])
    assert.deepStrictEqual(caveats.map((c) => c.name), ["TimestampEnforcer", "RedeemerEnforcer", "ExactCalldataEnforcer", "AllowedTargetsEnforcer",
      "ValueLteEnforcer", "LimitedCallsEnforcer", "NativeTokenPeriodTransferEnforcer"])
    const terms = (name: string) => caveats.find((c) => c.name === name)!.terms
    assert.strictEqual(terms("ExactCalldataEnforcer"), "0x")
    assert.strictEqual(terms("AllowedTargetsEnforcer"), addr(0xa11ce))
    assert.strictEqual(word(terms("ValueLteEnforcer"), 0), 10n ** 17n)
    const period = terms("NativeTokenPeriodTransferEnforcer")
    assert.strictEqual(word(period, 0), 5n * 10n ** 17n)
    // No period: one allowance over the grant's whole life, from a minute before the build.
    assert.strictEqual(word(period, 64), BigInt(nowSeconds - 60))
  })

  it("a period or a stream of ETH; the summary says it only sends ETH", () => {
    const periodic = caveatsOf(eth({ period: { every: "day" } }), [ETH])
    assert.strictEqual(word(periodic.at(-1)!.terms, 32), 86_400n)
    const streamed = caveatsOf(eth({ stream: { perSecond: 0.001, initial: 0.01 } }), [ETH])
    assert.strictEqual(streamed.at(-1)!.name, "NativeTokenStreamingEnforcer")
    assert.deepStrictEqual([0, 32, 64].map((at) => word(streamed.at(-1)!.terms, at)), [10n ** 16n, 5n * 10n ** 17n, 10n ** 15n])
    const s = summaryOf(okPolicy(eth(), [ETH]), delegate, [ETH])
    assert.include(s, "at most 0.5 ETH in total")
    assert.include(s, "It may only send ETH, with no call data")
    assert.notInclude(s, "no ETH attached")
  })

  it("refusals: beside an ERC-20 budget, with allowedActions, a network without the enforcer", () => {
    assert.include(refusal(policyOf({ budgets: [{ token: { symbol: "ETH" }, amount: 1 }, usdc(1)] }, [ETH, USDC])), "only budget")
    assert.include(refusal(policyOf({ ...eth(), allowedActions: [{ name: "x", target: USDC.address, selectors: ["0xa9059cbb"] }] }, [ETH])), "allowedActions")
    const g = grantOf(eth(), [ETH], environment(["ExactCalldataEnforcer"]))
    assert.include(g._tag === "Invalid" ? g.message : "", "ExactCalldataEnforcer")
  })
})
