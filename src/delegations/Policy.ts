/**
 * The delegation policy, as pure functions: the defaults a build fills in, the
 * plain-language summary, and the evaluation of one action against a policy and the
 * delegation's current use. No I/O here; `Delegations.ts` supplies the state (read
 * under a row lock) and acts on the verdict. Rules and defaults: docs/delegations.md.
 */
import { formatUnits, parseUnits } from "viem"
import type { Address } from "../domain/Primitives.ts"
import type { Token } from "../tokens/TokenRegistry.ts"
import { approvalRuleOf, type ApprovalRuleInput, isRuleProblem } from "./ApprovalRule.ts"
import { basketDecline, type BasketInput, basketOf } from "./Baskets.ts"
import type { BudgetPeriod, BudgetStream, PolicySet, RevocationMethods } from "./Domain.ts"
import { isNative, NATIVE_ADDRESS } from "../tokens/Native.ts"
import { currentPeriod, periodOf, type PeriodInput } from "./Periods.ts"
import { redeemersOf, type RedeemersInput } from "./Redeemers.ts"
import { accruesBy, streamOf, type StreamInput, streamUnits, unlockedAt } from "./Streams.ts"

/** ERC-20 `transfer(address,uint256)`: the one function a delegated action calls. */
export const TRANSFER_SELECTOR = "0xa9059cbb"

/** Defaults for what `POST /delegations/build` leaves out. */
export const POLICY_DEFAULTS = {
  /** Action count when none is given. */
  maxActions: 10,
  /** Lifetime when no `expiresAt` is given. */
  lifetimeMs: 30 * 24 * 60 * 60 * 1000,
  /** Longest lifetime accepted. */
  maxLifetimeMs: 365 * 24 * 60 * 60 * 1000,
  /** Shortest lifetime accepted (an already-expiring grant is a mistake). */
  minLifetimeMs: 60 * 1000,
  /** Longest recipient allowlist: each entry is a LogicalOrWrapper group in the signed terms (Grant.ts). */
  maxRecipients: 32
} as const

/** Every reason an action can be declined for (`out_of_scope` + `declineReason`). */
export const DECLINE_REASONS = [
  "not_active",
  "revoked",
  "expired",
  "account_frozen",
  "token_not_allowed",
  "recipient_not_allowed",
  "per_action_exceeded",
  "count_exhausted",
  "cap_exceeded",
  "period_exceeded",
  "stream_exceeded"
] as const
export type DeclineReason = typeof DECLINE_REASONS[number]

// ---------------------------------------------------------------------------------------
// Amounts

/**
 * A number in plain decimal notation (no exponent, no grouping): what `toLocaleString` with these
 * options gives, with the formatter made once (`toLocaleString` builds one per call: ≈ 0.1 ms,
 * several times per action).
 */
const plainDecimal = new Intl.NumberFormat("en-US", { useGrouping: false, maximumFractionDigits: 20 })

/** A JSON amount in token units → base units; `undefined` when not positive or finer than the token's decimals. */
export const toUnits = (amount: number, decimals: number): bigint | undefined => {
  if (!Number.isFinite(amount) || amount <= 0) return undefined
  const text = plainDecimal.format(amount)
  const [, fraction = ""] = text.split(".")
  if (fraction.length > decimals) return undefined
  const units = parseUnits(text, decimals)
  return units > 0n ? units : undefined
}

export const fromUnits = (units: bigint, decimals: number): number => Number(formatUnits(units, decimals))

// ---------------------------------------------------------------------------------------
// Defaults

export interface AmountInput {
  readonly token: { readonly symbol: string }
  readonly amount: number
}

export interface PolicyInput {
  readonly chainId: number
  readonly budgets: ReadonlyArray<AmountInput & { readonly period?: PeriodInput; readonly stream?: StreamInput }>
  readonly perActionMax?: AmountInput
  readonly maxActions?: number
  readonly recipientAllowlist?: ReadonlyArray<{ readonly name: string; readonly address: string; readonly chainId: number }>
  readonly allowedActions?: ReadonlyArray<{ readonly name: string; readonly target: string; readonly selectors: ReadonlyArray<string> }>
  readonly expiresAt?: string
  /** Redeemable only from this whole second (TimestampEnforcer's lower bound; an AP2 mandate's execution window). */
  readonly notBefore?: string
  readonly redeemers?: RedeemersInput
  readonly approval?: ApprovalRuleInput
  readonly basket?: BasketInput
}

export type PolicyResult =
  | { readonly _tag: "Ok"; readonly policy: PolicySet }
  | { readonly _tag: "Invalid"; readonly message: string; readonly field?: string }

const tokenRef = (t: Token) => ({ symbol: t.symbol, chainId: t.chainId, address: t.address })
const invalid = (message: string): PolicyResult => ({ _tag: "Invalid", message })

/** The expiry (whole seconds, as TimestampEnforcer counts them), or why it is refused. */
const expiryOf = (given: string | undefined, now: Date, minLifetimeMs: number): Date | string => {
  const expiresAt = given === undefined ? new Date(now.getTime() + POLICY_DEFAULTS.lifetimeMs) : new Date(given)
  if (Number.isNaN(expiresAt.getTime())) return "expiresAt is not a valid timestamp"
  const lifetime = expiresAt.getTime() - now.getTime()
  if (lifetime < minLifetimeMs) return `expiresAt must be at least ${Math.ceil(minLifetimeMs / 1000)} seconds in the future`
  if (lifetime > POLICY_DEFAULTS.maxLifetimeMs) return "expiresAt must be within a year"
  return new Date(Math.floor(expiresAt.getTime() / 1000) * 1000)
}

/**
 * A revocation-only policy (ERC-7715 `erc20-token-revocation` / `token-approval-revocation`):
 * no budget, no recipient, no allowed transfer; its per-action maximum is 0 of the chain's native
 * coin (it moves nothing). What it may call is `revocation` (ApprovalRevocationEnforcer, Grant.ts).
 */
export const makeRevocationPolicy = (
  input: {
    readonly revocation: RevocationMethods
    readonly maxActions?: number
    readonly expiresAt?: string
    readonly redeemers?: RedeemersInput
  },
  native: Token,
  now: Date,
  minLifetimeMs: number = POLICY_DEFAULTS.minLifetimeMs
): PolicyResult => {
  if (!Object.values(input.revocation).some((on) => on)) return { _tag: "Invalid", message: "a revocation grant allows at least one revocation method", field: "revocation" }
  const maxActions = input.maxActions ?? POLICY_DEFAULTS.maxActions
  if (!Number.isInteger(maxActions) || maxActions < 1) return invalid("maxActions must be a positive integer")
  const expiresAt = expiryOf(input.expiresAt, now, minLifetimeMs)
  if (typeof expiresAt === "string") return invalid(expiresAt)
  const redeemers = redeemersOf(input.redeemers)
  if (typeof redeemers === "string") return invalid(redeemers)
  return {
    _tag: "Ok",
    policy: {
      budgets: [],
      perActionMax: { token: tokenRef(native), amount: 0 },
      maxActions,
      recipientAllowlist: [],
      allowedActions: [],
      expiresAt: expiresAt.toISOString(),
      freezeGated: true,
      redeemers,
      revocation: { ...input.revocation }
    }
  }
}

/**
 * The full policy: the request's limits, validated, with defaults for the rest.
 * `tokenOf` resolves a symbol among the already-resolved budget tokens.
 */
export const makePolicySet = (
  input: PolicyInput,
  budgetTokens: ReadonlyArray<Token>,
  now: Date,
  /** Shortest lifetime accepted (`DELEGATION_MIN_LIFETIME`; default 1 minute). */
  minLifetimeMs: number = POLICY_DEFAULTS.minLifetimeMs,
  /**
   * Where a renewing period starts when the request names no start: a time the chain has
   * already reached (`startOnChain`), so the chain's enforcers read the allowance as started
   * (default `now`). Streams start at `now` whatever this is: they accrue from their start.
   */
  periodStart: Date = now
): PolicyResult => {
  if (budgetTokens.length !== input.budgets.length) return invalid("every budget needs a known token")
  const addresses = new Set(budgetTokens.map((t) => t.address))
  if (addresses.size !== budgetTokens.length) return invalid("each token may have one budget only")
  for (const [i, b] of input.budgets.entries()) {
    if (toUnits(b.amount, budgetTokens[i]!.decimals) === undefined) {
      return invalid(`budget of ${budgetTokens[i]!.symbol} must be positive with at most ${budgetTokens[i]!.decimals} decimals`)
    }
  }
  const bySymbol = (symbol: string) => budgetTokens.find((t) => t.symbol.toUpperCase() === symbol.toUpperCase())

  // Per-action maximum: default = the first budget in full (one action may use it all).
  let perActionMax: PolicySet["perActionMax"]
  if (input.perActionMax !== undefined) {
    const token = bySymbol(input.perActionMax.token.symbol)
    if (token === undefined) return invalid(`perActionMax token ${input.perActionMax.token.symbol} has no budget`)
    if (toUnits(input.perActionMax.amount, token.decimals) === undefined) {
      return invalid(`perActionMax must be positive with at most ${token.decimals} decimals`)
    }
    perActionMax = { token: tokenRef(token), amount: input.perActionMax.amount }
  } else {
    perActionMax = { token: tokenRef(budgetTokens[0]!), amount: input.budgets[0]!.amount }
  }

  // The chain holds the per-action maximum per token (TransferCapEnforcer): the same amount in each budget token.
  for (const t of budgetTokens) {
    if (toUnits(perActionMax.amount, t.decimals) === undefined) {
      return invalid(`perActionMax ${perActionMax.amount} cannot be expressed in ${t.symbol} (${t.decimals} decimals), so the chain could not enforce it`)
    }
  }

  const maxActions = input.maxActions ?? POLICY_DEFAULTS.maxActions
  if (!Number.isInteger(maxActions) || maxActions < 1) return invalid("maxActions must be a positive integer")

  const recipientAllowlist = (input.recipientAllowlist ?? []).map((r) => ({ ...r, address: r.address.toLowerCase() }))
  if (recipientAllowlist.length > POLICY_DEFAULTS.maxRecipients) {
    return invalid(`recipientAllowlist has at most ${POLICY_DEFAULTS.maxRecipients} entries (each one is enforced on chain)`)
  }
  const names = new Set<string>()
  for (const r of recipientAllowlist) {
    if (r.chainId !== input.chainId) return invalid(`recipient ${r.name} is on chain ${r.chainId}, not ${input.chainId}`)
    const key = r.name.trim().toLowerCase()
    if (key.length === 0) return invalid("recipient names must not be empty")
    if (names.has(key)) return invalid(`recipient name ${r.name} appears twice`)
    names.add(key)
  }

  // Allowed actions: ERC-20 transfer on each budget token (the only call a delegated
  // action makes, and the only one ERC20TransferAmountEnforcer lets through).
  const native = budgetTokens.some((t) => isNative(t.address))
  if (native && budgetTokens.length > 1) {
    return invalid("an ETH budget must be the grant's only budget: an action sends ETH with no call data, or one token transfer, never both kinds")
  }
  if (native && input.allowedActions !== undefined) {
    return invalid("allowedActions does not apply to an ETH budget: its only action is sending ETH with no call data")
  }
  const derived = native
    ? [{ name: "ETH transfer", target: NATIVE_ADDRESS, selectors: [] }]
    : budgetTokens.map((t) => ({ name: `${t.symbol} transfer`, target: t.address, selectors: [TRANSFER_SELECTOR] }))
  let allowedActions: PolicySet["allowedActions"] = derived
  if (input.allowedActions !== undefined) {
    for (const a of input.allowedActions) {
      if (!addresses.has(a.target.toLowerCase())) {
        return invalid(`allowed action ${a.name}: target ${a.target} is not a budget token`)
      }
      if (a.selectors.length === 0 || a.selectors.some((s) => s.toLowerCase() !== TRANSFER_SELECTOR)) {
        return invalid(`allowed action ${a.name}: only transfer(address,uint256) (${TRANSFER_SELECTOR}) is supported`)
      }
    }
    if (input.allowedActions.length === 0) return invalid("allowedActions must not be empty")
    allowedActions = input.allowedActions.map((a) => ({ name: a.name, target: a.target.toLowerCase(), selectors: [TRANSFER_SELECTOR] }))
  }

  const expiry = expiryOf(input.expiresAt, now, minLifetimeMs)
  if (typeof expiry === "string") return invalid(expiry)
  const expiresAt = expiry
  const notBefore = input.notBefore === undefined ? undefined : new Date(input.notBefore)
  if (notBefore !== undefined && (Number.isNaN(notBefore.getTime()) || notBefore.getTime() % 1000 !== 0 || notBefore.getTime() < 1000)) {
    return invalid("notBefore must be a timestamp on a whole second (the chain counts seconds)")
  }
  if (notBefore !== undefined && notBefore.getTime() >= expiresAt.getTime()) return invalid("notBefore must be before the expiry")

  const periods: Array<BudgetPeriod | undefined> = []
  const streams: Array<BudgetStream | undefined> = []
  for (const [i, b] of input.budgets.entries()) {
    const token = budgetTokens[i]!
    if (b.period !== undefined && b.stream !== undefined) return invalid(`the budget of ${token.symbol} is a period or a stream, not both`)
    const p = periodOf(b.period, token.symbol, periodStart, expiresAt)
    if (typeof p === "string") return invalid(p)
    periods.push(p)
    const s = streamOf(b.stream, { amount: b.amount, symbol: token.symbol, decimals: token.decimals }, now, expiresAt)
    if (typeof s === "string") return invalid(s)
    // One streaming enforcer holds one token's stream: the grant's other tokens would have no budget on chain.
    if (s !== undefined && input.budgets.length > 1) return invalid(`a stream budget (${token.symbol}) must be the grant's only budget: the chain's streaming enforcer holds one token`)
    streams.push(s)
  }
  const redeemers = redeemersOf(input.redeemers)
  if (typeof redeemers === "string") return invalid(redeemers)
  const approval = input.approval === undefined
    ? undefined
    : approvalRuleOf(input.approval, budgetTokens, perActionMax.amount, { native, stream: streams.some((s) => s !== undefined) }, { now: periodStart, expiresAt })
  if (approval !== undefined && isRuleProblem(approval)) return { _tag: "Invalid", message: approval.message, field: approval.field }
  const basket = input.basket === undefined ? undefined : basketOf(input.basket, budgetTokens, periods, streams, tokenRef, input.budgets.map((b) => b.amount))
  if (typeof basket === "string") return { _tag: "Invalid", message: basket, field: "basket" }

  return {
    _tag: "Ok",
    policy: {
      budgets: input.budgets.map((b, i) => {
        const period = periods[i]
        const stream = streams[i]
        return {
          token: tokenRef(budgetTokens[i]!),
          amount: b.amount,
          ...(period === undefined ? {} : { period }),
          ...(stream === undefined ? {} : { stream })
        }
      }),
      perActionMax,
      maxActions,
      recipientAllowlist,
      allowedActions,
      expiresAt: expiresAt.toISOString(),
      ...(notBefore === undefined ? {} : { notBefore: notBefore.toISOString() }),
      freezeGated: true,
      redeemers,
      ...(approval === undefined ? {} : { approval }),
      ...(basket === undefined ? {} : { basket })
    }
  }
}

// ---------------------------------------------------------------------------------------
// Summary (Summary.ts)


// ---------------------------------------------------------------------------------------
// Evaluation

const fmt = (n: number) => n.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 18 })

/** What the delegation has used so far (executed + reserved, never released), per token address. */
export interface PolicyState {
  /** Stored status: `pending` until the enable executed; `failed` if it never will. */
  readonly status: "pending" | "active" | "failed" | "revoked"
  readonly accountFrozen: boolean
  readonly usedUnits: ReadonlyMap<string, bigint>
  readonly actionsUsed: number
}

export interface ActionInput {
  readonly recipient: string
  readonly amount: number
  /** Symbol of a budget token; default: the per-action maximum's token. */
  readonly token?: string
  /** Pay the delegate's gas in a stablecoin instead of being sponsored. */
  readonly gasToken?: "USDC" | "USDT"
  /** The exact amount in base units, when the caller has it (an x402 payment): `amount` then only words it. */
  readonly units?: bigint
}

export type Evaluation =
  | {
    readonly _tag: "Allowed"
    readonly token: { readonly symbol: string; readonly address: Address; readonly decimals: number }
    readonly units: bigint
    readonly recipient: Address
    readonly recipientName?: string
  }
  | {
    readonly _tag: "Declined"
    readonly reason: DeclineReason
    readonly message: string
    /** `period_exceeded`: when the next period starts. */
    readonly resetsAt?: string
  }
  | { readonly _tag: "Invalid"; readonly message: string }

const declined = (reason: DeclineReason, message: string, resetsAt?: string): Evaluation =>
  resetsAt === undefined ? { _tag: "Declined", reason, message } : { _tag: "Declined", reason, message, resetsAt }
const isAddress = (s: string) => /^0x[0-9a-fA-F]{40}$/.test(s)

/** The status a reader sees (stored status, clock and account freeze). */
export const visibleStatus = (
  stored: PolicyState["status"],
  expiresAt: string,
  accountFrozen: boolean,
  now: Date
): "active" | "frozen" | "expired" | "revoked" | "pending" | "failed" => {
  if (stored !== "active") return stored
  if (now.getTime() >= new Date(expiresAt).getTime()) return "expired"
  if (accountFrozen) return "frozen"
  return "active"
}

/**
 * One action against the policy and the current use. Order: the delegation's own
 * state (not active, revoked, expired, account frozen), then what the action names
 * (token, recipient), then its size (per-action max), then the running totals
 * (count, budget).
 */
export const evaluate = (
  policy: PolicySet,
  decimalsOf: (address: string) => number,
  state: PolicyState,
  action: ActionInput,
  now: Date
): Evaluation => {
  if (state.status === "revoked") return declined("revoked", "This delegation has been revoked")
  if (state.status !== "active") return declined("not_active", "This delegation's enable operation has not executed")
  if (now.getTime() >= new Date(policy.expiresAt).getTime()) {
    return declined("expired", `This delegation expired at ${policy.expiresAt}`)
  }
  if (state.accountFrozen && policy.freezeGated) return declined("account_frozen", "The account is frozen")
  if (policy.revocation !== undefined) {
    return declined("token_not_allowed", "This grant may only revoke token approvals this account gave: it moves no tokens and no ETH")
  }

  const symbol = action.token ?? policy.perActionMax.token.symbol
  const budget = policy.budgets.find((b) => b.token.symbol.toUpperCase() === symbol.toUpperCase())
  if (budget === undefined || budget.token.address === undefined) {
    return declined("token_not_allowed", `${symbol} is not a budget token of this delegation`)
  }
  const tokenAddress = budget.token.address.toLowerCase()
  if (!policy.allowedActions.some((a) => a.target.toLowerCase() === tokenAddress)) {
    return declined("token_not_allowed", `${symbol} transfers are not among this delegation's allowed actions`)
  }
  const decimals = decimalsOf(tokenAddress)

  let recipient: string
  let recipientName: string | undefined
  const byName = policy.recipientAllowlist.find((r) => r.name.trim().toLowerCase() === action.recipient.trim().toLowerCase())
  if (byName !== undefined) {
    recipient = byName.address.toLowerCase()
    recipientName = byName.name
  } else if (isAddress(action.recipient)) {
    recipient = action.recipient.toLowerCase()
    if (policy.recipientAllowlist.length > 0) {
      const entry = policy.recipientAllowlist.find((r) => r.address.toLowerCase() === recipient)
      if (entry === undefined) return declined("recipient_not_allowed", `${action.recipient} is not on the recipient allowlist`)
      recipientName = entry.name
    }
  } else {
    return declined("recipient_not_allowed", `${JSON.stringify(action.recipient)} is neither an address nor a name on the allowlist`)
  }

  const units = action.units === undefined ? toUnits(action.amount, decimals) : action.units > 0n ? action.units : undefined
  if (units === undefined) return { _tag: "Invalid", message: `amount must be positive with at most ${decimals} decimals` }
  const perActionUnits = toUnits(policy.perActionMax.amount, decimals) ?? 0n
  if (units > perActionUnits) {
    return declined("per_action_exceeded", `${fmt(action.amount)} ${budget.token.symbol} exceeds the per-action maximum of ${fmt(policy.perActionMax.amount)}`)
  }
  if (state.actionsUsed >= policy.maxActions) {
    return declined("count_exhausted", `All ${policy.maxActions} actions of this delegation are used or reserved`)
  }
  const limitUnits = toUnits(budget.amount, decimals) ?? 0n
  const used = state.usedUnits.get(tokenAddress) ?? 0n
  if (budget.period !== undefined) {
    const current = currentPeriod(budget.period, now)
    if (!current.started) {
      return declined("period_exceeded", `The first ${budget.token.symbol} period starts at ${current.start.toISOString()}`, current.start.toISOString())
    }
    if (used + units > limitUnits) {
      return declined(
        "period_exceeded",
        `${fmt(action.amount)} ${budget.token.symbol} exceeds what is left of this period's allowance ` +
          `(${fmt(fromUnits(limitUnits - used, decimals))} of ${fmt(budget.amount)}); the next period starts at ${current.end.toISOString()}`,
        current.end.toISOString()
      )
    }
  } else if (budget.stream !== undefined) {
    const stream = streamUnits(budget.stream, budget.amount, decimals)
    const unlocked = unlockedAt(stream, Math.floor(now.getTime() / 1000))
    if (used + units > unlocked) {
      const at = accruesBy(stream, used + units)
      const when = at === undefined ? undefined : new Date(at * 1000).toISOString()
      return declined(
        "stream_exceeded",
        `${fmt(action.amount)} ${budget.token.symbol} exceeds what the stream has accrued and is unspent ` +
          `(${fmt(fromUnits(unlocked > used ? unlocked - used : 0n, decimals))} ${budget.token.symbol} now)` +
          (when === undefined ? "; the stream's maximum does not allow it" : `; enough will have accrued at ${when}`),
        when
      )
    }
  } else if (used + units > limitUnits) {
    return declined(
      "cap_exceeded",
      `${fmt(action.amount)} ${budget.token.symbol} exceeds what is left of the budget (${fmt(fromUnits(limitUnits - used, decimals))} of ${fmt(budget.amount)})`
    )
  }
  // One allowance across the basket's tokens (BasketPeriodEnforcer): refused here before the chain would.
  const overBasket = basketDecline(policy, decimalsOf, state.usedUnits, tokenAddress, units, now)
  if (overBasket !== undefined) return declined(overBasket.reason, overBasket.message, overBasket.resetsAt)
  return {
    _tag: "Allowed",
    token: { symbol: budget.token.symbol, address: tokenAddress, decimals },
    units,
    recipient,
    ...(recipientName === undefined ? {} : { recipientName })
  }
}
