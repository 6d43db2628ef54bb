/**
 * The grant in plain language: every limit the chain holds (one clause per caveat of the
 * grant's delegation: Grant.ts; docs/onchain.md has the table), and nothing it does not.
 */
import { approvalWords } from "./ApprovalRule.ts"
import type { PolicySet, RevocationMethods } from "./Domain.ts"
import { isNative } from "../tokens/Native.ts"
import { periodWords } from "./Periods.ts"
import { redeemerWords } from "./Redeemers.ts"
import { streamWords } from "./Streams.ts"

const fmt = (n: number) => n.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 18 })
const listJoin = (xs: ReadonlyArray<string>, conjunction = "and") =>
  xs.length <= 1 ? xs.join("") : `${xs.slice(0, -1).join(", ")} ${conjunction} ${xs[xs.length - 1]}`
const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`

/**
 * Every limit in plain language, and nothing the chain does not hold: each clause is one
 * caveat of the grant's delegation (Grant.ts; docs/onchain.md has the table).
 */
export const humanSummary = (policy: PolicySet, delegatee: string, name?: string): string => {
  const who = name === undefined ? `The delegate ${delegatee}` : `"${name}" (delegate ${delegatee})`
  if (policy.revocation !== undefined) return revocationSummary(policy, policy.revocation, who)
  const totals = policy.budgets.filter((b) => b.period === undefined && b.stream === undefined)
  const renewing = policy.budgets.filter((b) => b.period !== undefined)
  const streaming = policy.budgets.filter((b) => b.stream !== undefined)
  const spend = [
    ...(totals.length === 0 ? [] : [`at most ${listJoin(totals.map((b) => `${fmt(b.amount)} ${b.token.symbol}`))} in total`]),
    ...renewing.map((b) => `at most ${fmt(b.amount)} ${b.token.symbol} ${periodWords(b.period!)}`),
    ...streaming.map((b) => streamWords(b.stream!, b.amount, b.token.symbol))
  ]
  const native = policy.budgets.some((b) => isNative(b.token.address))
  const perAction = listJoin(policy.budgets.map((b) => `${fmt(policy.perActionMax.amount)} ${b.token.symbol}`), "or")
  const calls = listJoin(policy.allowedActions.map((a) => {
    const symbol = policy.budgets.find((b) => b.token.address?.toLowerCase() === a.target.toLowerCase())?.token.symbol
    return `transfer(address,uint256) on ${symbol ?? a.name} (${a.target})`
  }))
  const recipients = policy.recipientAllowlist.length === 0
    ? "to any recipient"
    : `only to ${listJoin(policy.recipientAllowlist.map((r) => `${r.name} (${r.address})`))}`
  const actions = policy.maxActions === 1 ? "1 action" : `${policy.maxActions} actions`
  const across = policy.budgets.length > 1 ? " in total across all its tokens" : ""
  const only = native ? "It may only send ETH, with no call data (so it calls no contract function)." : `It may only call ${calls}, with no ETH attached.`
  return `${who} may spend ${listJoin(spend)}, at most ${perAction} per action, in at most ${actions}${across}, ` +
    `${recipients}, until ${utc(policy.expiresAt)}. ${only} ${redeemerWords(policy.redeemers)}` +
    approvalWords(policy.approval, policy.budgets.map((b) => b.token.symbol)) +
    `Nothing else is allowed: the chain enforces each of these limits, even if the delegate goes around this service. ` +
    `You can revoke it at any time, and it is blocked while the account is frozen.`
}

/** What each ApprovalRevocationEnforcer primitive lets the delegate do (only ever back to none). */
const REVOCATION_WORDS: ReadonlyArray<readonly [keyof RevocationMethods, string]> = [
  ["erc20Approve", "set an ERC-20 allowance back to 0 (approve(spender, 0))"],
  ["erc721Approve", "clear an ERC-721 token's approval"],
  ["erc721SetApprovalForAll", "withdraw an ERC-721 operator's approval for all (setApprovalForAll false)"],
  ["permit2Approve", "set a Permit2 allowance back to 0"],
  ["permit2Lockdown", "lock down Permit2 allowances"],
  ["permit2InvalidateNonces", "invalidate Permit2 nonces"]
]

/** A revocation-only grant: one clause per caveat (TimestampEnforcer, RedeemerEnforcer, ApprovalRevocationEnforcer, LimitedCallsEnforcer). */
const revocationSummary = (policy: PolicySet, methods: RevocationMethods, who: string): string => {
  const allowed = REVOCATION_WORDS.filter(([k]) => methods[k]).map(([, w]) => w)
  const actions = policy.maxActions === 1 ? "1 action" : `${policy.maxActions} actions`
  return `${who} may only revoke token approvals this account gave: ${listJoin(allowed, "or")}, in at most ${actions}, ` +
    `until ${utc(policy.expiresAt)}. It cannot move any token or ETH, nor give or raise an approval. ${redeemerWords(policy.redeemers)}` +
    `Nothing else is allowed: the chain enforces each of these limits, even if the delegate goes around this service. ` +
    `You can revoke it at any time, and it is blocked while the account is frozen.`
}
