/**
 * The grant's one delegation, as pure functions (Grant.ts): which caveats a PolicySet
 * becomes, the args a redemption picks, and the grants that cannot be enforced on chain
 * (a 400 at build, never a grant that enforces less). The chain side: bypass.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { decodeAbiParameters, type Address, type Hex } from "viem"
import { type ApprovalRule, approvalArgs, approvalTerms } from "../../src/chain/Approvals.ts"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import { grantTermsOf, logicalOrArgs, makeGrant, MAX_RECIPIENTS, periodArgs, redeemArgs } from "../../src/delegations/Grant.ts"
import { evaluate, makePolicySet } from "../../src/delegations/Policy.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryOf } from "./summaryOf.ts"

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address
const names = ["TimestampEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer", "AllowedCalldataEnforcer",
  "LogicalOrWrapperEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer", "ApprovalEnforcer",
  "RedeemerEnforcer", "ERC20StreamingEnforcer", "ExactCalldataEnforcer", "NativeTokenPeriodTransferEnforcer", "NativeTokenStreamingEnforcer"]
const environment = (without: ReadonlyArray<string> = []): DelegationEnvironment => ({
  DelegationManager: addr(1),
  EntryPoint: addr(2),
  SimpleFactory: addr(3),
  implementations: {},
  caveatEnforcers: Object.fromEntries(names.filter((n) => !without.includes(n)).map((n, i) => [n, addr(0x100 + i)]))
})
const enforcer = (env: DelegationEnvironment, name: string) => env.caveatEnforcers[name]!.toLowerCase()

const USDC: Token = { chainId: 31337, symbol: "USDC", name: "USD Coin", address: addr(0xa1).toLowerCase(), decimals: 6 }
const USDT: Token = { chainId: 31337, symbol: "USDT", name: "Tether", address: addr(0xa2).toLowerCase(), decimals: 6 }
const WBTC: Token = { chainId: 31337, symbol: "WBTC", name: "Bitcoin", address: addr(0xa3).toLowerCase(), decimals: 8 }
const now = new Date("2026-01-01T00:00:00.000Z")
const recipients = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `r${i}`, address: addr(0xb00 + i), chainId: 31337 }))

const policy = (extra: Record<string, unknown> = {}, tokens: ReadonlyArray<Token> = [USDC, USDT]) => {
  const r = makePolicySet({ chainId: 31337, budgets: tokens.map((t) => ({ token: { symbol: t.symbol }, amount: 10 })), ...extra }, tokens, now)
  if (r._tag !== "Ok") throw new Error(r.message)
  return r.policy
}
const parties = { delegator: addr(0xd1), delegate: addr(0xd2), salt: "0x01" as Hex }
const grantOf = (p: ReturnType<typeof policy>, env = environment()) => makeGrant(env, grantTermsOf(p, () => 6, parties, now)!)

describe("the grant's caveats", () => {
  it("one delegation holds every limit, in refusal order", () => {
    const env = environment()
    const g = grantOf(policy({ recipientAllowlist: recipients(2), perActionMax: { token: { symbol: "USDC" }, amount: 3 }, maxActions: 2 }), env)
    if (g._tag !== "Ok") throw new Error(g.message)
    assert.deepStrictEqual(
      g.delegation.caveats.map((c) => c.enforcer.toLowerCase()),
      ["TimestampEnforcer", "RedeemerEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer", "LogicalOrWrapperEnforcer",
        "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer"].map((n) => enforcer(env, n))
    )
    assert.deepStrictEqual(g.scope.tokens, [USDC.address, USDT.address] as ReadonlyArray<Address>)
  })

  it("one recipient is pinned by AllowedCalldata alone; none adds no recipient caveat", () => {
    const env = environment()
    const one = grantOf(policy({ recipientAllowlist: recipients(1) }), env)
    const none = grantOf(policy(), env)
    if (one._tag !== "Ok" || none._tag !== "Ok") throw new Error("expected grants")
    assert.isTrue(one.delegation.caveats.some((c) => c.enforcer.toLowerCase() === enforcer(env, "AllowedCalldataEnforcer")))
    assert.isFalse(one.delegation.caveats.some((c) => c.enforcer.toLowerCase() === enforcer(env, "LogicalOrWrapperEnforcer")))
    assert.strictEqual(none.delegation.caveats.length, 8)
  })

  it("a redemption picks the token's period entry and the recipient's group", () => {
    const env = environment()
    const g = grantOf(policy({ recipientAllowlist: recipients(3) }), env)
    if (g._tag !== "Ok") throw new Error(g.message)
    const r = redeemArgs(env, g.delegation, g.scope, { token: USDT.address as Address, to: addr(0xb02) })!
    const argsOf = (name: string) => r.caveats.find((c) => c.enforcer.toLowerCase() === enforcer(env, name))!.args
    assert.strictEqual(argsOf("MultiTokenPeriodEnforcer"), periodArgs(1))
    assert.strictEqual(argsOf("LogicalOrWrapperEnforcer"), logicalOrArgs(2))
    assert.deepStrictEqual(decodeAbiParameters([{ type: "uint256" }], argsOf("MultiTokenPeriodEnforcer")), [1n])
    assert.isUndefined(redeemArgs(env, g.delegation, g.scope, { token: addr(0xee), to: addr(0xb00) }))
    assert.isUndefined(redeemArgs(env, g.delegation, g.scope, { token: USDC.address as Address, to: addr(0xee) }))
  })
})

describe("an approval rule", () => {
  const rule: ApprovalRule = { required: 2, approvers: [addr(0xc1), addr(0xc2), addr(0xc3)], thresholds: [{ token: USDC.address as Address, units: 1_000_000n }] }
  const withRule = (r: ApprovalRule, env = environment()) =>
    makeGrant(env, { ...grantTermsOf(policy({ perActionMax: { token: { symbol: "USDC" }, amount: 3 } }), () => 6, parties, now)!, approval: r })
  const message = (g: ReturnType<typeof makeGrant>) => g._tag === "Invalid" ? g.message : "granted"

  it("is the grant's last caveat, its terms the rule's; a redemption carries the approvals there only", () => {
    const env = environment()
    const g = withRule(rule, env)
    if (g._tag !== "Ok") throw new Error(g.message)
    const last = g.delegation.caveats.at(-1)!
    assert.strictEqual(last.enforcer.toLowerCase(), enforcer(env, "ApprovalEnforcer"))
    assert.strictEqual(last.terms, approvalTerms(rule))
    const set = { nonce: 1n, deadline: 2n, approvals: [{ approver: addr(0xc1), signature: "0x01" as Hex }] }
    const r = redeemArgs(env, g.delegation, g.scope, { token: USDC.address as Address, to: addr(0xb00), approvals: set })!
    assert.strictEqual(r.caveats.at(-1)!.args, approvalArgs(set))
    assert.strictEqual(redeemArgs(env, g.delegation, g.scope, { token: USDC.address as Address, to: addr(0xb00) })!.caveats.at(-1)!.args, "0x")
    const without = grantOf(policy(), env)
    assert.isFalse(without._tag === "Ok" && without.delegation.caveats.some((c) => c.enforcer.toLowerCase() === enforcer(env, "ApprovalEnforcer")))
  })

  it("a rule the chain cannot hold, or that says nothing a grant can use, is refused", () => {
    assert.include(message(withRule(rule, environment(["ApprovalEnforcer"]))), "no ApprovalEnforcer")
    assert.include(message(withRule({ ...rule, required: 4 })), "at most the number of approvers")
    assert.include(message(withRule({ ...rule, approvers: [addr(0xc1), addr(0xc1)] })), "distinct")
    assert.include(message(withRule({ ...rule, thresholds: [{ token: addr(0xee), units: 1n }] })), "names a budget token")
    assert.include(message(withRule({ ...rule, thresholds: [{ token: USDC.address as Address, units: 3_000_001n }] })), "at most the per-action maximum")
    assert.strictEqual(withRule({ ...rule, thresholds: [{ token: USDC.address as Address, units: 3_000_000n }] })._tag, "Ok")
    assert.strictEqual(withRule({ ...rule, thresholds: [] })._tag, "Ok", "no threshold: every transfer needs approvals")
  })
})

describe("grants the chain cannot hold are refused", () => {
  it("a network without an enforcer the grant needs", () => {
    const g = grantOf(policy({ recipientAllowlist: recipients(2) }), environment(["LogicalOrWrapperEnforcer"]))
    assert.strictEqual(g._tag, "Invalid")
    assert.include(g._tag === "Invalid" ? g.message : "", "LogicalOrWrapperEnforcer")
    assert.strictEqual(grantOf(policy(), environment(["TransferCapEnforcer"]))._tag, "Invalid")
    assert.strictEqual(grantOf(policy(), environment(["LogicalOrWrapperEnforcer"]))._tag, "Ok", "not needed without a 2+ allowlist")
  })

  it("terms the kit's builders refuse are a refusal, not a crash", () => {
    const terms = grantTermsOf(policy(), () => 6, parties, now)!
    const g = makeGrant(environment(), { ...terms, maxActions: 0 })
    assert.strictEqual(g._tag, "Invalid")
    assert.include(g._tag === "Invalid" ? g.message : "", "the kit refused a caveat")
  })

  it("an allowlist longer than the terms can carry", () => {
    const r = makePolicySet({ chainId: 31337, budgets: [{ token: { symbol: "USDC" }, amount: 1 }], recipientAllowlist: recipients(MAX_RECIPIENTS + 1) }, [USDC], now)
    assert.strictEqual(r._tag, "Invalid")
    assert.strictEqual(makePolicySet({ chainId: 31337, budgets: [{ token: { symbol: "USDC" }, amount: 1 }], recipientAllowlist: recipients(MAX_RECIPIENTS) }, [USDC], now)._tag, "Ok")
  })

  it("a per-action maximum finer than another budget token's decimals", () => {
    const r = makePolicySet(
      { chainId: 31337, budgets: [{ token: { symbol: "WBTC" }, amount: 1 }, { token: { symbol: "USDC" }, amount: 1 }], perActionMax: { token: { symbol: "WBTC" }, amount: 0.00000001 } },
      [WBTC, USDC],
      now
    )
    assert.strictEqual(r._tag, "Invalid")
    assert.include(r._tag === "Invalid" ? r.message : "", "USDC")
  })
})

describe("the summary says what the chain holds", () => {
  it("per-action maximum per token, count across tokens, no ETH, on-chain", () => {
    const s = summaryOf(policy({ perActionMax: { token: { symbol: "USDC" }, amount: 3 }, maxActions: 4, recipientAllowlist: recipients(2) }), addr(0xd2), [USDC, USDT])
    for (const part of ["10 USDC and 10 USDT in total", "at most 3 USDC or 3 USDT per action", "4 actions in total across all its tokens",
      `only to ${addr(0xb00)} and ${addr(0xb01)},`, `${addr(0xb00)} "r0", ${addr(0xb01)} "r1"`, "no ETH attached", "the chain enforces each of these limits"]) {
      assert.include(s, part)
    }
  })

  it("a budget token outside allowedActions is declined by the service as the chain would", () => {
    const p = policy({ allowedActions: [{ name: "USDC only", target: USDC.address, selectors: ["0xa9059cbb"] }] })
    const e = evaluate(p, () => 6, { status: "active", accountFrozen: false, usedUnits: new Map(), actionsUsed: 0 }, { recipient: addr(0xb00), amount: 1, token: "USDT" }, now)
    assert.deepStrictEqual(e._tag === "Declined" ? e.reason : e._tag, "token_not_allowed")
  })
})
