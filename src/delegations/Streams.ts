/**
 * Token streams: an amount that accrues per second up to a maximum, as ERC20StreamingEnforcer
 * and NativeTokenStreamingEnforcer hold it on chain (nothing before `start`; from `start`,
 * `initial` at once, then `perSecond` per second; never more than the maximum in total).
 * Pure functions: validation, what has accrued at an instant (the summary reads streams from the signed caveats: Summary.ts).
 * Rules: docs/delegations.md ("Streams").
 */
import { parseUnits } from "viem"
import type { BudgetStream } from "./Domain.ts"

export interface StreamInput {
  readonly perSecond: number
  readonly initial?: number
  readonly start?: string
}

/** Base units of a stream (the maximum is the budget's amount). */
export interface StreamUnits {
  readonly initial: bigint
  readonly perSecond: bigint
  readonly max: bigint
  readonly startSeconds: number
}

/** A JSON amount ≥ 0 in token units → base units; `undefined` when negative or finer than the token. */
export const toUnitsOrZero = (amount: number, decimals: number): bigint | undefined => {
  if (!Number.isFinite(amount) || amount < 0) return undefined
  const text = amount.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 20 })
  const [, fraction = ""] = text.split(".")
  if (fraction.length > decimals) return undefined
  return parseUnits(text, decimals)
}

/**
 * A budget's stream from the request, or why it is refused: a positive rate and an initial amount
 * (default 0) in the token's units, the initial amount below the maximum (the standard's rule), a
 * start on a whole second (default: now) before the grant's expiry.
 */
export const streamOf = (
  s: StreamInput | undefined,
  budget: { readonly amount: number; readonly symbol: string; readonly decimals: number },
  now: Date,
  expiresAt: Date
): BudgetStream | undefined | string => {
  if (s === undefined) return undefined
  const { symbol, decimals } = budget
  const perSecond = toUnitsOrZero(s.perSecond, decimals)
  if (perSecond === undefined || perSecond === 0n) return `the stream of ${symbol} needs a positive perSecond with at most ${decimals} decimals`
  const initial = toUnitsOrZero(s.initial ?? 0, decimals)
  if (initial === undefined) return `the stream's initial amount of ${symbol} must be 0 or more with at most ${decimals} decimals`
  const max = toUnitsOrZero(budget.amount, decimals)
  if (max === undefined || initial >= max) return `the stream's initial amount of ${symbol} must be below its maximum (the budget's amount)`
  const start = s.start === undefined ? new Date(Math.floor(now.getTime() / 1000) * 1000) : new Date(s.start)
  if (Number.isNaN(start.getTime())) return `the stream start of ${symbol} is not a valid timestamp`
  if (start.getTime() % 1000 !== 0) return `the stream start of ${symbol} must be a whole second (the chain counts seconds)`
  if (start.getTime() < 1000) return `the stream start of ${symbol} must be after 1970-01-01T00:00:01Z`
  if (start.getTime() >= expiresAt.getTime()) return `the stream of ${symbol} starts at or after the grant expires (${expiresAt.toISOString()})`
  return { perSecond: s.perSecond, initial: s.initial ?? 0, start: start.toISOString() }
}

export const streamUnits = (stream: BudgetStream, amount: number, decimals: number): StreamUnits => ({
  initial: toUnitsOrZero(stream.initial, decimals) ?? 0n,
  perSecond: toUnitsOrZero(stream.perSecond, decimals) ?? 0n,
  max: toUnitsOrZero(amount, decimals) ?? 0n,
  startSeconds: Math.floor(new Date(stream.start).getTime() / 1000)
})

/** What has accrued by `atSeconds` (spent or not), as the enforcer computes it. */
export const unlockedAt = (s: StreamUnits, atSeconds: number): bigint => {
  if (atSeconds < s.startSeconds) return 0n
  const unlocked = s.initial + s.perSecond * BigInt(atSeconds - s.startSeconds)
  return unlocked > s.max ? s.max : unlocked
}

/** The first whole second at which at least `units` will have accrued; `undefined` beyond the maximum. */
export const accruesBy = (s: StreamUnits, units: bigint): number | undefined => {
  if (units > s.max) return undefined
  if (units <= s.initial) return s.startSeconds
  const seconds = (units - s.initial + s.perSecond - 1n) / s.perSecond
  return s.startSeconds + Number(seconds)
}
