/**
 * The approval rule as a PolicySet field (pure): what a build accepts, every refusal naming its
 * field (m > n, duplicate approvers, the zero address, a threshold above the per-action maximum
 * or on no budget token, finer than the token, with a stream or ETH), the grant's caveat terms
 * in base units, and the summary (only what the chain holds).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Address, Hex } from "viem"
import { approvalTerms, decodeApprovalTerms } from "../../src/chain/Approvals.ts"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import { approverProblem } from "../../src/delegations/ApprovalRule.ts"
import { grantTermsOf, makeGrant } from "../../src/delegations/Grant.ts"
import { makePolicySet } from "../../src/delegations/Policy.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryOf } from "../delegations/summaryOf.ts"

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address
const USDC: Token = { chainId: 31337, symbol: "USDC", name: "USD Coin", address: addr(0xa1).toLowerCase(), decimals: 6 }
const USDT: Token = { chainId: 31337, symbol: "USDT", name: "Tether", address: addr(0xa2).toLowerCase(), decimals: 6 }
const ETH: Token = { chainId: 31337, symbol: "ETH", name: "Ether", address: "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", decimals: 18 }
const now = new Date("2026-01-01T00:00:00.000Z")
const [a1, a2, a3] = [addr(0xc1), addr(0xc2), addr(0xc3)]
const names = ["TimestampEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer", "TransferCapEnforcer",
  "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer", "ApprovalEnforcer", "RedeemerEnforcer"]
const environment: DelegationEnvironment = {
  DelegationManager: addr(1),
  EntryPoint: addr(2),
  SimpleFactory: addr(3),
  implementations: {},
  caveatEnforcers: Object.fromEntries(names.map((n, i) => [n, addr(0x100 + i)]))
}

const build = (approval: unknown, extra: Record<string, unknown> = {}, tokens: ReadonlyArray<Token> = [USDC, USDT]) =>
  makePolicySet(
    {
      chainId: 31337,
      budgets: tokens.map((t) => ({ token: { symbol: t.symbol }, amount: 100 })),
      perActionMax: { token: { symbol: tokens[0]!.symbol }, amount: 20 },
      approval: approval as never,
      ...extra
    },
    tokens,
    now
  )
const refusal = (approval: unknown, extra: Record<string, unknown> = {}, tokens?: ReadonlyArray<Token>) => {
  const r = build(approval, extra, tokens)
  if (r._tag !== "Invalid") throw new Error("accepted")
  return { field: r.field, message: r.message }
}

describe("the approval rule in a PolicySet", () => {
  const rule = { required: 2, approvers: [a1, a2, a3], thresholds: [{ token: { symbol: "usdc" }, amount: 5 }] }

  it("is kept with its tokens resolved and addresses lowercased; the grant holds it in base units", () => {
    const r = build({ ...rule, approvers: [a1.toUpperCase().replace("0X", "0x"), a2, a3] })
    if (r._tag !== "Ok") throw new Error(r.message)
    assert.deepStrictEqual(r.policy.approval, {
      required: 2,
      approvers: [a1, a2, a3],
      thresholds: [{ token: { symbol: "USDC", chainId: 31337, address: USDC.address }, amount: 5 }]
    })
    const terms = grantTermsOf(r.policy, () => 6, { delegator: addr(0xd1), delegate: addr(0xd2), salt: "0x01" as Hex }, now)!
    assert.deepStrictEqual(terms.approval, { required: 2, approvers: [a1, a2, a3], thresholds: [{ token: USDC.address as Address, units: 5_000_000n }] })
    const g = makeGrant(environment, terms)
    if (g._tag !== "Ok") throw new Error(g.message)
    const last = g.delegation.caveats.at(-1)!
    assert.strictEqual(last.enforcer.toLowerCase(), environment.caveatEnforcers["ApprovalEnforcer"]!.toLowerCase())
    assert.strictEqual(last.terms, approvalTerms(terms.approval!))
    assert.deepStrictEqual(decodeApprovalTerms(last.terms as Hex)?.thresholds, [{ token: USDC.address as Address, units: 5_000_000n }])
  })

  it("a threshold of 0 and a token without one: every transfer of it needs approvals (and the summary says so)", () => {
    const r = build({ required: 1, approvers: [a1], thresholds: [{ token: { symbol: "USDC" }, amount: 0 }] })
    if (r._tag !== "Ok") throw new Error(r.message)
    const words = summaryOf(r.policy, addr(0xd2), [USDC, USDT])
    assert.include(words, "Any USDC transfer or any USDT transfer needs the approval of " + a1)
    assert.include(words, "EIP-712 signature of that exact transfer")
  })

  it("the summary states the rule and nothing the chain does not hold", () => {
    const r = build(rule)
    if (r._tag !== "Ok") throw new Error(r.message)
    const s = summaryOf(r.policy, addr(0xd2), [USDC, USDT], { name: "Bot" })
    assert.include(s, `A transfer of more than 5 USDC or any USDT transfer needs the approvals of 2 of ${a1}, ${a2} and ${a3}`)
    assert.include(s, "valid once and until its deadline")
    // No promise the chain cannot keep (who is notified, how fast, that the service asks).
    for (const word of ["notif", "webhook", "service will"]) assert.notInclude(s.toLowerCase(), word)
    const plain = build(undefined)
    if (plain._tag !== "Ok") throw new Error(plain.message)
    assert.notInclude(summaryOf(plain.policy, addr(0xd2), [USDC, USDT]), "approval")
  })

  it("refuses what cannot be held, naming the field", () => {
    assert.deepStrictEqual(refusal({ ...rule, required: 4 }).field, "approval.required", "m > n")
    assert.deepStrictEqual(refusal({ ...rule, required: 0 }).field, "approval.required")
    assert.deepStrictEqual(refusal({ ...rule, required: 1.5 }).field, "approval.required")
    assert.deepStrictEqual(refusal({ ...rule, approvers: [a1, a2, a1] }).field, "approval.approvers.2", "duplicate approvers")
    assert.deepStrictEqual(refusal({ ...rule, approvers: [a1, a2.toUpperCase().replace("0X", "0x"), a2] }).field, "approval.approvers.2", "duplicates in any case")
    assert.deepStrictEqual(refusal({ ...rule, approvers: [a1, addr(0)] }).field, "approval.approvers.1", "the zero address")
    assert.deepStrictEqual(refusal({ ...rule, approvers: [] }).field, "approval.approvers")
    assert.deepStrictEqual(refusal({ ...rule, approvers: Array.from({ length: 17 }, (_, i) => addr(0xe00 + i)) }).field, "approval.approvers")
    const above = refusal({ ...rule, thresholds: [{ token: { symbol: "USDC" }, amount: 20.5 }] })
    assert.deepStrictEqual(above.field, "approval.thresholds.0.amount", "a threshold above the per-action maximum")
    assert.include(above.message, "above the per-action maximum")
    assert.deepStrictEqual(refusal({ ...rule, thresholds: [{ token: { symbol: "DAI" }, amount: 1 }] }).field, "approval.thresholds.0.token")
    assert.deepStrictEqual(refusal({ ...rule, thresholds: [{ token: { symbol: "USDC" }, amount: 1 }, { token: { symbol: "USDC" }, amount: 2 }] }).field, "approval.thresholds.1.token")
    assert.deepStrictEqual(refusal({ ...rule, thresholds: [{ token: { symbol: "USDC" }, amount: 0.0000001 }] }).field, "approval.thresholds.0.amount")
    assert.deepStrictEqual(refusal({ ...rule, thresholds: [] }, { budgets: [{ token: { symbol: "ETH" }, amount: 1 }], perActionMax: { token: { symbol: "ETH" }, amount: 1 } }, [ETH]).field, "approval")
    assert.deepStrictEqual(
      refusal({ ...rule, thresholds: [] }, { budgets: [{ token: { symbol: "USDC" }, amount: 10, stream: { perSecond: 1 } }] }, [USDC]).field,
      "approval"
    )
  })

  it("per period (issue 44): kept with its period, held by per-period terms, stated as cumulative; a threshold may pass the per-action maximum", () => {
    const daily = { ...rule, thresholds: [{ token: { symbol: "USDC" }, amount: 30 }], period: { every: "day" }, perRecipient: true }
    const r = build(daily)
    if (r._tag !== "Ok") throw new Error(r.message)
    assert.deepStrictEqual(r.policy.approval?.period, { every: "day", seconds: 86_400, start: now.toISOString() })
    assert.strictEqual(r.policy.approval?.perRecipient, true)
    const terms = grantTermsOf(r.policy, () => 6, { delegator: addr(0xd1), delegate: addr(0xd2), salt: "0x01" as Hex }, now)!
    const window = { seconds: 86_400, startSeconds: now.getTime() / 1000, perRecipient: true }
    assert.deepStrictEqual(terms.approval?.window, window)
    const g = makeGrant(environment, terms)
    if (g._tag !== "Ok") throw new Error(g.message)
    assert.deepStrictEqual(decodeApprovalTerms(g.delegation.caveats.at(-1)!.terms as Hex)?.window, window)
    const s = summaryOf(r.policy, addr(0xd2), [USDC, USDT])
    assert.include(s, "A transfer that takes what moves without approvals above 30 USDC per day to one recipient")
    assert.include(s, "The approval threshold is cumulative per token and recipient and period")
    const perToken = build({ ...daily, perRecipient: false })
    if (perToken._tag !== "Ok") throw new Error(perToken.message)
    assert.include(summaryOf(perToken.policy, addr(0xd2), [USDC, USDT]), "The approval threshold is cumulative per token and period")
    // Per transfer it says so, and 30 is refused there (above the per-action maximum of 20).
    const plain = build(rule)
    if (plain._tag !== "Ok") throw new Error(plain.message)
    assert.include(summaryOf(plain.policy, addr(0xd2), [USDC, USDT]), "The approval threshold is per transfer.")
    assert.strictEqual(refusal({ ...daily, period: undefined, perRecipient: undefined }).field, "approval.thresholds.0.amount")
    assert.strictEqual(refusal({ ...rule, perRecipient: true }).field, "approval.perRecipient")
    assert.strictEqual(refusal({ ...rule, period: { every: "day", seconds: 5 } }).field, "approval.period")
    assert.strictEqual(refusal({ ...rule, period: { every: "month" } }, { expiresAt: "2026-01-10T00:00:00.000Z" }).field, "approval.period")
  })

  it("an approver the agent controls is refused naming its field and why (who it is: test/approvals/selfApproval.test.ts)", () => {
    const problem = approverProblem({ index: 1, address: a2, why: "the delegate itself" })
    assert.strictEqual(problem.field, "approval.approvers.1")
    assert.include(problem.message, a2)
    assert.include(problem.message, "the delegate itself")
    assert.include(problem.message, "cannot approve its own actions")
  })
})
