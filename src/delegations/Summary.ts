/**
 * The grant in plain language, written from the delegation the owner signs and nothing else:
 * every figure, token, recipient, period and rule is one caveat's terms as SignedTerms.ts reads
 * them back (docs/onchain.md has the table), never the request that asked for them. Words from
 * anyone else (the grant's name, a 7715 justification, recipients' names) come last, cleaned,
 * bounded and quoted as the requester's (src/domain/OutsideText.ts).
 */
import { type Address, formatUnits } from "viem"
import type { ApprovalRule } from "../chain/Approvals.ts"
import { BASKET_DECIMALS } from "../chain/Basket.ts"
import { quoteOutsideText, requesterWords } from "../domain/OutsideText.ts"
import { isNative } from "../tokens/Native.ts"
import type { RevocationMethods } from "./Domain.ts"
import { PERIOD_SECONDS } from "./Periods.ts"
import type { SignedBudget, SignedTerms } from "./SignedTerms.ts"

/** What the summary names a token by: the service's own registry (never the request). */
export type TokenOf = (address: string) => { readonly symbol: string; readonly decimals: number } | undefined

/** The requester's words, shown after the limits. */
export interface RequesterText {
  readonly name?: string
  readonly recipientNames?: ReadonlyArray<{ readonly address: string; readonly name: string }>
}

const TRANSFER = "0xa9059cbb"
const listJoin = (xs: ReadonlyArray<string>, conjunction = "and") =>
  xs.length <= 1 ? xs.join("") : `${xs.slice(0, -1).join(", ")} ${conjunction} ${xs[xs.length - 1]}`
const isoOf = (seconds: number) => new Date(seconds * 1000).toISOString()
/** Minutes when the instant is on a whole minute, else seconds: the figure is the caveat's exactly. */
const utc = (seconds: number) => {
  const iso = isoOf(seconds)
  return seconds % 60 === 0 ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`
}
const utcSeconds = (seconds: number) => `${isoOf(seconds).slice(0, 10)} ${isoOf(seconds).slice(11, 19)} UTC`

/** An amount of a token in its units and symbol; a token the registry does not know, in base units and by address. */
const amountOf = (tokenOf: TokenOf, token: Address, units: bigint) => {
  const t = tokenOf(token)
  return t === undefined ? `${units} base units of the token ${token}` : `${formatUnits(units, t.decimals)} ${t.symbol}`
}
const symbolOf = (tokenOf: TokenOf, token: Address) => tokenOf(token)?.symbol ?? `the token ${token}`

const periodEach = (seconds: number) =>
  seconds === PERIOD_SECONDS.day
    ? "per day"
    : seconds === PERIOD_SECONDS.week
    ? "per week"
    : seconds === PERIOD_SECONDS.month
    ? "per 30-day month"
    : `per ${seconds} seconds`

/** One budget's clause: a single allowance to the expiry is a total; a shorter one renews; a stream accrues. */
const budgetWords = (tokenOf: TokenOf, b: SignedBudget, terms: SignedTerms, nowSeconds: number) => {
  const amount = amountOf(tokenOf, b.token, b.units)
  if (b.stream !== undefined) {
    const initial = b.stream.initialUnits > 0n ? `${amountOf(tokenOf, b.token, b.stream.initialUnits)} at once, then ` : ""
    return `at most ${amount} in total as a stream (${initial}${amountOf(tokenOf, b.token, b.stream.perSecondUnits)} per second ` +
      `from ${utcSeconds(b.stream.startSeconds)}; what has not accrued cannot be spent)`
  }
  const p = b.period
  if (p === undefined || p.startSeconds + p.seconds >= terms.expiresAtSeconds) {
    return `at most ${amount} in total${p !== undefined && p.startSeconds > nowSeconds ? ` from ${utcSeconds(p.startSeconds)}` : ""}`
  }
  return `at most ${amount} ${periodEach(p.seconds)} (periods of ${p.seconds} s from ${utcSeconds(p.startSeconds)}; ` +
    "what is unspent does not carry over)"
}

/**
 * The approval rule as ApprovalEnforcer's terms hold it, saying which kind of threshold it is: per
 * transfer, or per period (per token, or per token and recipient) counting what moved without approvals.
 */
const approvalWords = (tokenOf: TokenOf, rule: ApprovalRule | undefined, budgetTokens: ReadonlyArray<Address>): string => {
  if (rule === undefined) return ""
  const w = rule.window
  const counted = w === undefined ? "" : w.perRecipient ? " to one recipient" : ""
  const period = w === undefined ? "" : `${periodEach(w.seconds)}${counted} (periods of ${w.seconds} s from ${utcSeconds(w.startSeconds)})`
  const gated = [
    ...rule.thresholds.map((t) =>
      t.units === 0n
        ? `any ${symbolOf(tokenOf, t.token)} transfer`
        : w === undefined
        ? `a transfer of more than ${amountOf(tokenOf, t.token, t.units)}`
        : `a transfer that takes what moves without approvals above ${amountOf(tokenOf, t.token, t.units)} ${period}`
    ),
    ...budgetTokens.filter((b) => !rule.thresholds.some((t) => t.token.toLowerCase() === b.toLowerCase()))
      .map((b) => `any ${symbolOf(tokenOf, b)} transfer`)
  ]
  const approvers = rule.approvers.map((a) => a.toLowerCase())
  const who = approvers.length === 1
    ? `the approval of ${approvers[0]}`
    : `the approvals of ${rule.required === approvers.length ? "all" : `${rule.required} of`} ${listJoin(approvers)}`
  const kind = w === undefined
    ? "The approval threshold is per transfer. "
    : `The approval threshold is cumulative ${w.perRecipient ? "per token and recipient" : "per token"} and period: ` +
      "every transfer made without approvals in a period counts towards it (approved transfers do not), so splitting a transfer " +
      `${w.perRecipient ? "to one recipient " : ""}does not escape it; before ${utcSeconds(w.startSeconds)} every transfer needs approvals. `
  return `${listJoin(gated, "or").replace(/^./, (c) => c.toUpperCase())} needs ${who}, each an EIP-712 signature of that exact transfer, ` +
    "valid once and until its deadline. " + kind
}

/**
 * BasketPeriodEnforcer's terms: "Across USDC, USDT and DAI together it may spend at most 100 USD
 * per week (…), each token counted 1:1 as USD by its decimals." Tokens by the registry's symbol.
 */
const basketWords = (tokenOf: TokenOf, terms: SignedTerms): string => {
  const b = terms.basket
  if (b === undefined) return ""
  const amount = `${formatUnits(b.units, BASKET_DECIMALS)} USD`
  const tokens = listJoin(b.tokens.map((t) => symbolOf(tokenOf, t.token)))
  const once = b.startSeconds + b.periodSeconds >= terms.expiresAtSeconds
  const when = once
    ? "in total"
    : `${periodEach(b.periodSeconds)} (periods of ${b.periodSeconds} s from ${utcSeconds(b.startSeconds)}; what is unspent does not carry over)`
  const decimals = b.tokens.map((t) => `${symbolOf(tokenOf, t.token)} ${t.decimals}`).join(", ")
  return `Across ${tokens} together it may spend at most ${amount} ${when}, each token counted 1:1 as USD by its decimals (${decimals}); ` +
    "no other token counts. "
}

/** RedeemerEnforcer's list in words; no list: redelegation is open. */
const redeemerWords = (terms: SignedTerms) => {
  if (terms.redeemers === undefined) return "The delegate may pass it on: anyone it delegates to may redeem it, within these limits. "
  const others = terms.redeemers.filter((r) => r !== terms.delegate)
  if (others.length === 0) return "Only the delegate itself may redeem it: a delegation it passes on to anyone else is refused on chain. "
  const withDelegate = terms.redeemers.includes(terms.delegate)
  return `Only ${withDelegate ? "the delegate and " : ""}${others.join(", ")} may redeem it${withDelegate ? " (the delegate may pass it to them)" : ""}; ` +
    "anyone else is refused on chain. "
}

const actionsWords = (terms: SignedTerms) =>
  terms.maxActions === undefined ? "in any number of actions" : `in at most ${terms.maxActions === 1 ? "1 action" : `${terms.maxActions} actions`}`

const CLOSING = "Nothing else is allowed: the chain enforces each of these limits, even if the delegate goes around this service. " +
  "You can revoke it at any time, and it is blocked while the account is frozen."

/** The requester's words after everything the chain holds: the grant's name, then the names it gave recipients. */
const requesterText = (words: RequesterText | undefined): string => {
  if (words === undefined) return ""
  const named = (words.recipientNames ?? []).filter((r) => requesterWords("x", r.name) !== "")
  return requesterWords("Named by the requester", words.name) +
    (named.length === 0 ? "" : ` Recipient names given by the requester: ${named.map((r) => `${r.address.toLowerCase()} ${quoteOutsideText(r.name)}`).join(", ")}.`)
}

/**
 * Every limit of the signed delegation in plain language, and nothing it does not hold; then the
 * requester's words, quoted. `nowSeconds`: the build's time (a budget starting later says so).
 * `note`: the service's own words about where the limits came from (an AP2 mandate's mapping,
 * src/ap2/Mapping.ts), after the limits and before the requester's words.
 */
export const humanSummary = (
  terms: SignedTerms,
  tokenOf: TokenOf,
  words?: RequesterText,
  nowSeconds = Math.floor(Date.now() / 1000),
  note?: string
): string => {
  const who = `The delegate ${terms.delegate}`
  // TimestampEnforcer admits strictly after its lower bound: the first second it admits is the one after.
  const from = terms.notBeforeSeconds > 0 ? ` from ${utc(terms.notBeforeSeconds + 1)}` : ""
  if (terms.revocation !== undefined) return revocationSummary(terms, terms.revocation, who, from) + requesterText(words)
  const streamed = terms.budgets.filter((b) => b.stream !== undefined)
  // Plain totals read as one clause ("at most 10 USDC and 10 USDT in total").
  const totals = terms.budgets.filter((b) => b.stream === undefined && budgetWords(tokenOf, b, terms, nowSeconds).endsWith(" in total"))
  const rest = terms.budgets.filter((b) => b.stream === undefined && !totals.includes(b))
  const spend = [
    ...(totals.length === 0 ? [] : [`at most ${listJoin(totals.map((b) => amountOf(tokenOf, b.token, b.units)))} in total`]),
    ...rest.map((b) => budgetWords(tokenOf, b, terms, nowSeconds)),
    ...streamed.map((b) => budgetWords(tokenOf, b, terms, nowSeconds))
  ]
  const native = terms.budgets.some((b) => isNative(b.token))
  const perAction = terms.perAction.length === 0
    ? "any amount per action"
    : `at most ${listJoin(terms.perAction.map((c) => amountOf(tokenOf, c.token, c.units)), "or")} per action`
  const calls = listJoin(terms.targets.flatMap((target) =>
    terms.selectors.map((s) => `${s === TRANSFER ? "transfer(address,uint256)" : `the function ${s}`} on ${tokenOf(target)?.symbol ?? "the contract"} (${target})`)
  ))
  const recipients = terms.recipients.length === 0 ? "to any recipient" : `only to ${listJoin(terms.recipients)}`
  const across = Math.max(terms.budgets.length, terms.basket?.tokens.length ?? 0) > 1 && terms.maxActions !== undefined ? " in total across all its tokens" : ""
  const attached = terms.maxValue === undefined || terms.maxValue === 0n ? "with no ETH attached" : `with at most ${formatUnits(terms.maxValue, 18)} ETH attached`
  const only = native && terms.exactCalldata === "0x"
    ? "It may only send ETH, with no call data (so it calls no contract function)."
    : `It may only call ${calls === "" ? "any function" : calls}, ${attached}.`
  // A basket-only grant (ERC-7715 erc20-basket-periodic) has no budget caveat but the basket's, stated next.
  const spent = spend.length === 0 && terms.basket !== undefined ? "only what the basket below allows" : listJoin(spend)
  return `${who} may spend ${spent}, ${perAction}, ${actionsWords(terms)}${across}, ` +
    `${recipients}${from}, until ${utc(terms.expiresAtSeconds)}. ${basketWords(tokenOf, terms)}${only} ${redeemerWords(terms)}` +
    approvalWords(tokenOf, terms.approval, terms.budgets.map((b) => b.token)) + CLOSING +
    (note === undefined ? "" : ` ${note}`) + requesterText(words)
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
const revocationSummary = (terms: SignedTerms, methods: RevocationMethods, who: string, from: string): string => {
  const allowed = REVOCATION_WORDS.filter(([k]) => methods[k]).map(([, w]) => w)
  return `${who} may only revoke token approvals this account gave: ${listJoin(allowed, "or")}, ${actionsWords(terms)}${from}, ` +
    `until ${utc(terms.expiresAtSeconds)}. It cannot move any token or ETH, nor give or raise an approval. ${redeemerWords(terms)}` + CLOSING
}
