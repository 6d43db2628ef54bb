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
import { currentPeriod } from "./Periods.ts"

export interface BasketInput {
  readonly amount: number
  readonly unit?: "USD"
}

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
  tokenRef: (t: Token) => BasketBudget["tokens"][number]
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
  return { unit: "USD", amount: input.amount, tokens: tokens.map(tokenRef), ...(period === undefined ? {} : { period }) }
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
