/**
 * Which threshold holds an action back, in the words of an approval request's card (its summary and
 * the "Approval needed" notification), read from the grant's rule as its ApprovalEnforcer caveat
 * holds it (issue 44): per transfer, or per period (per token, or per token and recipient) with what
 * already moved without approvals in the period.
 */
import type { Address } from "viem"
import type { ApprovalRule } from "../chain/Approvals.ts"
import { fromUnits } from "../delegations/Policy.ts"

const periodText = (seconds: number) =>
  seconds === 86_400 ? "per day" : seconds === 604_800 ? "per week" : seconds === 2_592_000 ? "per 30-day month" : `per ${seconds} seconds`

export const thresholdWords = (
  rule: ApprovalRule,
  token: { readonly symbol: string; readonly address: Address; readonly decimals: number },
  unapprovedInPeriod: bigint | undefined
): string => {
  const entry = rule.thresholds.find((t) => t.token.toLowerCase() === token.address.toLowerCase())
  if (entry === undefined) return `every ${token.symbol} transfer of this grant needs approvals`
  const limit = `${fromUnits(entry.units, token.decimals)} ${token.symbol}`
  const w = rule.window
  if (w === undefined) return `above the grant's threshold of ${limit} per transfer`
  const where = w.perRecipient ? " to this recipient" : ""
  const so = unapprovedInPeriod === undefined ? "" : `; ${fromUnits(unapprovedInPeriod, token.decimals)} ${token.symbol} already moved (or is on its way)${where} without approvals in this period`
  return `above the grant's cumulative threshold of ${limit} ${periodText(w.seconds)}${where} without approvals${so}`
}
