/**
 * A grant's approval rule (issue 25), as the PolicySet holds it: per budget token, the most one
 * transfer may move alone (its threshold); above it, or for a budget token with no threshold,
 * m of n named approvers must sign an EIP-712 approval of that exact transfer. The chain holds
 * it (`ApprovalEnforcer`, the grant's last caveat: Grant.ts, src/chain/Approvals.ts). Pure
 * functions: the request's rule validated (every refusal names its field), the grant's terms
 * (the summary reads the rule back from the caveat: Summary.ts). Rules: docs/approvals.md.
 */
import type { Address } from "viem"
import { type ApprovalRule, MAX_APPROVERS } from "../chain/Approvals.ts"
import type { Token } from "../tokens/TokenRegistry.ts"
import type { ApprovalRuleWire } from "./Domain.ts"
import { type PeriodInput, periodOf } from "./Periods.ts"

export interface ApprovalRuleInput {
  readonly required: number
  readonly approvers: ReadonlyArray<string>
  readonly thresholds?: ReadonlyArray<{ readonly token: { readonly symbol: string }; readonly amount: number }>
  /** Issue 44: the thresholds count what moves without approvals per period (absent: per transfer). */
  readonly period?: PeriodInput
  readonly perRecipient?: boolean
}

/** A refusal of the rule: the field it names and why. */
export interface RuleProblem {
  readonly field: string
  readonly message: string
}

const ZERO = /^0x0{40}$/i
const isAddress = (s: string) => /^0x[0-9a-fA-F]{40}$/.test(s)
const fmt = (n: number) => n.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 18 })

/** A JSON amount (≥ 0) in base units, or `undefined` when finer than the token's decimals. */
const unitsOf = (amount: number, decimals: number): bigint | undefined => {
  if (!Number.isFinite(amount) || amount < 0) return undefined
  const text = amount.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 20 })
  const [whole = "0", fraction = ""] = text.split(".")
  if (fraction.length > decimals) return undefined
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, "0") || "0")
}

/**
 * The PolicySet's rule, or the problem with the request's. `budgetTokens` are the grant's
 * budget tokens (in order), `perActionMax` the policy's per-action maximum (the same amount in
 * every budget token: a threshold above it could never be reached, TransferCapEnforcer refuses
 * first). `native`: an ETH or stream grant, which the enforcer cannot gate.
 */
export const approvalRuleOf = (
  input: ApprovalRuleInput,
  budgetTokens: ReadonlyArray<Token>,
  perActionMax: number,
  shape: { readonly native: boolean; readonly stream: boolean },
  clock: { readonly now: Date; readonly expiresAt: Date }
): ApprovalRuleWire | RuleProblem => {
  if (shape.native || shape.stream) {
    return { field: "approval", message: "an approval rule holds ERC-20 transfers of total or renewing budgets: it cannot go with a stream or an ETH budget" }
  }
  const approvers = input.approvers.map((a) => a.toLowerCase())
  const n = approvers.length
  if (n < 1 || n > MAX_APPROVERS) return { field: "approval.approvers", message: `an approval rule names 1 to ${MAX_APPROVERS} approvers (it has ${n})` }
  for (const [i, a] of approvers.entries()) {
    if (!isAddress(a)) return { field: `approval.approvers.${i}`, message: `${a} is not an address` }
    if (ZERO.test(a)) return { field: `approval.approvers.${i}`, message: "the zero address cannot approve anything (no one holds its key)" }
    if (approvers.indexOf(a) !== i) return { field: `approval.approvers.${i}`, message: `${a} is named twice: each approver counts once` }
  }
  if (!Number.isInteger(input.required) || input.required < 1 || input.required > n) {
    return {
      field: "approval.required",
      message: `approval.required (${input.required}) must be a whole number from 1 to the number of approvers (${n})`
    }
  }
  // Per period (issue 44): the period as a budget's, checked the same way; per recipient only with a period.
  const period = periodOf(input.period, "the approval threshold", clock.now, clock.expiresAt)
  if (typeof period === "string") return { field: "approval.period", message: period }
  if (input.perRecipient === true && period === undefined) {
    return { field: "approval.perRecipient", message: "approval.perRecipient counts per recipient per period: it needs approval.period" }
  }
  const thresholds: Array<ApprovalRuleWire["thresholds"][number]> = []
  for (const [i, t] of (input.thresholds ?? []).entries()) {
    const field = `approval.thresholds.${i}`
    const token = budgetTokens.find((b) => b.symbol.toUpperCase() === t.token.symbol.toUpperCase())
    if (token === undefined) return { field: `${field}.token`, message: `${t.token.symbol} has no budget in this grant: a threshold names a budget token` }
    if (thresholds.some((x) => x.token.address === token.address)) return { field: `${field}.token`, message: `${token.symbol} has two thresholds` }
    if (unitsOf(t.amount, token.decimals) === undefined) {
      return { field: `${field}.amount`, message: `the threshold must be 0 or more, with at most ${token.decimals} decimals of ${token.symbol}` }
    }
    // Per transfer, a threshold above the per-action maximum is never reached; per period, several transfers reach it.
    if (period === undefined && t.amount > perActionMax) {
      return {
        field: `${field}.amount`,
        message: `the threshold (${fmt(t.amount)} ${token.symbol}) is above the per-action maximum (${fmt(perActionMax)}): ` +
          "no transfer could ever need the approval, since the chain refuses anything above the maximum first"
      }
    }
    thresholds.push({ token: { symbol: token.symbol, chainId: token.chainId, address: token.address }, amount: t.amount })
  }
  return {
    required: input.required,
    approvers,
    thresholds,
    ...(period === undefined ? {} : { period, perRecipient: input.perRecipient === true })
  }
}

export const isRuleProblem = (x: ApprovalRuleWire | RuleProblem): x is RuleProblem => "field" in x

/** The refusal of an approver the agent controls (AgentControl.ts finds them): the agent cannot approve its own actions. */
export const approverProblem = (own: { readonly index: number; readonly address: string; readonly why: string }): RuleProblem => ({
  field: `approval.approvers.${own.index}`,
  message: `approval.approvers.${own.index}: ${own.address} is controlled by the agent (${own.why}); ` +
    "the agent cannot approve its own actions: name an approver the agent does not control"
})

/** The rule's enforcer terms (src/chain/Approvals.ts `ApprovalRule`), thresholds in base units. */
export const approvalTermsOf = (rule: ApprovalRuleWire, decimalsOf: (address: string) => number): ApprovalRule => ({
  required: rule.required,
  approvers: rule.approvers.map((a) => a.toLowerCase() as Address),
  thresholds: rule.thresholds.map((t) => {
    const token = (t.token.address ?? "").toLowerCase() as Address
    return { token, units: unitsOf(t.amount, decimalsOf(token)) ?? 0n }
  }),
  ...(rule.period === undefined ? {} : {
    window: {
      seconds: rule.period.seconds,
      startSeconds: Math.floor(new Date(rule.period.start).getTime() / 1000),
      perRecipient: rule.perRecipient === true
    }
  })
})
