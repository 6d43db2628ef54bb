/**
 * Basket budgets (issue 44): one allowance across every budget token, each counted at 1:1 in USD
 * after its decimals, held on chain by BasketPeriodEnforcer (src/chain/contracts/Basket.sol). Pure
 * functions: the policy's basket from the request, and the basket's verdict on one action.
 * Rules: docs/delegations.md ("Basket budgets").
 */
import { BASKET_DECIMALS, toBasketUnits } from "../chain/Basket.ts"
import type { Token } from "../tokens/TokenRegistry.ts"
import { isNative } from "../tokens/Native.ts"
import type { BasketBudget, BudgetPeriod, BudgetStream, PolicySet } from "./Domain.ts"
import { currentPeriod, type PeriodInput } from "./Periods.ts"

export interface BasketInput {
  readonly amount: number
  readonly unit?: "USD"
  /**
   * The basket is the grant's only budget caveat (an ERC-7715 `erc20-basket-periodic` grant): every
   * budget is the basket's amount, which the basket alone already holds (each token counts 1:1, so no
   * token can pass the basket's amount), so no MultiTokenPeriod entries and no redemption args.
   */
  readonly only?: boolean
}

/** A build's basket as asked: with `tokens` it is the grant's only budget (and `period` its period). */
export interface BasketRequest extends BasketInput {
  readonly tokens?: ReadonlyArray<{ readonly symbol: string }>
  readonly period?: PeriodInput
}

/**
 * A build's budgets and basket as the policy takes them: a basket naming its `tokens` (with
 * `budgets` empty) becomes one budget per token at the basket's amount and period, the basket
 * being their only caveat; anything else is left as asked. A string: why it cannot be built.
 */
export const expandBasket = <B extends { readonly token: { readonly symbol: string }; readonly amount: number; readonly period?: PeriodInput }>(
  budgets: ReadonlyArray<B>,
  basket: BasketRequest | undefined
): { readonly budgets: ReadonlyArray<B | { readonly token: { readonly symbol: string }; readonly amount: number; readonly period?: PeriodInput }>; readonly basket?: BasketInput } | string => {
  if (basket?.tokens === undefined) {
    if (basket?.period !== undefined) return "basket.period goes with basket.tokens; otherwise the basket renews with its budgets' period"
    return basket === undefined ? { budgets } : { budgets, basket: { amount: basket.amount, ...(basket.unit === undefined ? {} : { unit: basket.unit }) } }
  }
  if (budgets.length > 0) return "a basket naming its tokens is the grant's only budget: leave budgets empty (each token's budget is the basket's amount)"
  if (basket.tokens.length === 0) return "basket.tokens names at least one token"
  const symbols = basket.tokens.map((t) => t.symbol.toUpperCase())
  if (new Set(symbols).size !== symbols.length) return "basket.tokens names a token twice"
  return {
    budgets: basket.tokens.map((t) => ({ token: { symbol: t.symbol }, amount: basket.amount, ...(basket.period === undefined ? {} : { period: basket.period }) })),
    basket: { amount: basket.amount, ...(basket.unit === undefined ? {} : { unit: basket.unit }), only: true }
  }
}

/** Stablecoins of the token registry that count 1:1 as USD (a basket of a dApp's request names only these). */
export const USD_STABLECOINS: ReadonlyArray<string> = ["USDC", "USDT", "DAI"]

/** The most tokens one basket holds (each is 21 bytes of the signed terms and a loop step on chain). */
export const MAX_BASKET_TOKENS = 16

const samePeriod = (a: BudgetPeriod | undefined, b: BudgetPeriod | undefined) =>
  a === undefined ? b === undefined : b !== undefined && a.seconds === b.seconds && a.start === b.start

/** An amount of the common unit (18 decimals), exactly, or undefined (not positive, finer than 18 decimals). */
export const basketUnits = (amount: number): bigint | undefined => {
  if (!Number.isFinite(amount) || amount <= 0) return undefined
  const text = amount.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 20 })
  const [whole, fraction = ""] = text.split(".")
  if (fraction.length > BASKET_DECIMALS) return undefined
  return BigInt(whole!) * 10n ** BigInt(BASKET_DECIMALS) + BigInt(fraction.padEnd(BASKET_DECIMALS, "0") || "0")
}

/**
 * The policy's basket, or why the chain could not hold it. Every budget token is in the basket (the
 * enforcer refuses any other token, so a budget token outside it could never move); the basket's
 * period is the budgets' one period (the service's ledger counts each token in it).
 */
export const basketOf = (
  input: BasketInput,
  tokens: ReadonlyArray<Token>,
  periods: ReadonlyArray<BudgetPeriod | undefined>,
  streams: ReadonlyArray<BudgetStream | undefined>,
  tokenRef: (t: Token) => BasketBudget["tokens"][number],
  amounts: ReadonlyArray<number> = []
): BasketBudget | string => {
  if (tokens.some((t) => isNative(t.address))) return "a basket counts ERC-20 stablecoins: it cannot hold an ETH budget"
  if (streams.some((s) => s !== undefined)) return "a basket's tokens have period budgets or totals, not streams"
  if (tokens.length > MAX_BASKET_TOKENS) return `a basket holds at most ${MAX_BASKET_TOKENS} tokens`
  if (tokens.some((t) => t.decimals > BASKET_DECIMALS)) return `a basket counts tokens of at most ${BASKET_DECIMALS} decimals`
  if (basketUnits(input.amount) === undefined) return `basket.amount must be positive with at most ${BASKET_DECIMALS} decimals`
  const period = periods[0]
  if (!periods.every((p) => samePeriod(p, period))) {
    return "every budget of a basket has the same period (or none): the basket's allowance renews with them"
  }
  if (input.only === true && amounts.some((a) => a !== input.amount)) {
    return "a basket that is the grant's only budget needs every token's budget at the basket's amount (the basket holds them)"
  }
  return {
    unit: "USD",
    amount: input.amount,
    tokens: tokens.map(tokenRef),
    ...(period === undefined ? {} : { period }),
    ...(input.only === true ? { only: true as const } : {})
  }
}

const fmt = (n: number) => n.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 18 })

/**
 * The basket's refusal of `units` of `token` (lowercase), given what each basket token has used
 * (executed and reserved, in the current period, reconciled with the chain), or undefined.
 */
export const basketDecline = (
  policy: PolicySet,
  decimalsOf: (address: string) => number,
  usedUnits: ReadonlyMap<string, bigint>,
  token: string,
  units: bigint,
  now: Date
): { readonly reason: "cap_exceeded" | "period_exceeded"; readonly message: string; readonly resetsAt?: string } | undefined => {
  const basket = policy.basket
  if (basket === undefined) return undefined
  const limit = basketUnits(basket.amount) ?? 0n
  let used = 0n
  for (const t of basket.tokens) {
    const address = (t.address ?? "").toLowerCase()
    used += toBasketUnits(usedUnits.get(address) ?? 0n, decimalsOf(address))
  }
  if (used + toBasketUnits(units, decimalsOf(token)) <= limit) return undefined
  const left = fmt(Number(limit - used) / 10 ** BASKET_DECIMALS)
  const across = basket.tokens.map((t) => t.symbol).join(", ")
  if (basket.period === undefined) {
    return { reason: "cap_exceeded", message: `This exceeds what is left of the basket budget across ${across} (${left} of ${fmt(basket.amount)} USD)` }
  }
  const current = currentPeriod(basket.period, now)
  return {
    reason: "period_exceeded",
    message: `This exceeds what is left of this period's basket budget across ${across} (${left} of ${fmt(basket.amount)} USD); ` +
      `the next period starts at ${current.end.toISOString()}`,
    resetsAt: current.end.toISOString()
  }
}
