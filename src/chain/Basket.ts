/**
 * BasketPeriodEnforcer's encodings (src/chain/contracts/Basket.sol): one allowance per period
 * across several tokens of one unit, each counted at 1:1 in a common unit of 18 decimals.
 *
 *   terms: periodAmount(32) ‖ periodDuration(32) ‖ startDate(32) ‖ k × (token(20) ‖ decimals(1))
 */
import { type Address, encodePacked, type Hex, hexToBigInt, hexToNumber, size, slice } from "viem"

/** The common unit's decimals: a token of d ≤ 18 decimals counts `amount × 10^(18 − d)`, exactly. */
export const BASKET_DECIMALS = 18

/** The enforcer keeps a period's spend in 192 bits: an allowance must be below 2^192 (about 6·10^39 USD). */
export const MAX_BASKET_UNITS = 2n ** 192n

export interface BasketTerms {
  /** The allowance of one period in the common unit (18 decimals: 100 USD = 100e18). */
  readonly units: bigint
  readonly periodSeconds: number
  readonly startSeconds: number
  readonly tokens: ReadonlyArray<{ readonly token: Address; readonly decimals: number }>
}

export const basketTerms = (b: BasketTerms): Hex =>
  encodePacked(
    ["uint256", "uint256", "uint256", ...b.tokens.flatMap(() => ["address", "uint8"] as const)],
    [b.units, BigInt(b.periodSeconds), BigInt(b.startSeconds), ...b.tokens.flatMap((t) => [t.token, t.decimals] as const)]
  )

/** The terms read back by the contract's layout; `undefined` when they are not a basket the contract accepts. */
export const decodeBasketTerms = (terms: Hex): BasketTerms | undefined => {
  const n = size(terms)
  if (n <= 96 || (n - 96) % 21 !== 0) return undefined
  const units = hexToBigInt(slice(terms, 0, 32))
  const period = hexToBigInt(slice(terms, 32, 64))
  const start = hexToBigInt(slice(terms, 64, 96))
  if (units === 0n || units >= MAX_BASKET_UNITS || period === 0n || start === 0n) return undefined
  if (period > BigInt(Number.MAX_SAFE_INTEGER) || start > BigInt(Number.MAX_SAFE_INTEGER)) return undefined
  const tokens: Array<{ token: Address; decimals: number }> = []
  for (let at = 96; at < n; at += 21) {
    const decimals = hexToNumber(slice(terms, at + 20, at + 21))
    if (decimals > BASKET_DECIMALS) return undefined
    tokens.push({ token: slice(terms, at, at + 20).toLowerCase() as Address, decimals })
  }
  return { units, periodSeconds: Number(period), startSeconds: Number(start), tokens }
}

/** An amount of a token of `decimals` in the common unit, as the contract counts it. */
export const toBasketUnits = (units: bigint, decimals: number): bigint => units * 10n ** BigInt(BASKET_DECIMALS - decimals)
