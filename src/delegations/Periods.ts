/**
 * Budget periods (allowances that renew): fixed lengths in whole seconds, as
 * MultiTokenPeriodEnforcer counts them on chain from a start; the period an instant falls
 * in (the summary reads periods from the signed caveats: Summary.ts). Pure functions. Rules: docs/delegations.md ("Periods").
 */
import type { BudgetPeriod } from "./Domain.ts"

export interface PeriodInput {
  readonly every?: "day" | "week" | "month"
  readonly seconds?: number
  readonly start?: string
}

/** Period lengths in seconds; a month is 30 days (the chain's periods have a fixed length). */
export const PERIOD_SECONDS = { day: 86_400, week: 604_800, month: 2_592_000 } as const

/**
 * A start the chain has already reached: the wall clock's second, or the chain's latest block
 * when that is older. Enforcers compare a start with `block.timestamp`, and what is simulated
 * at "latest" (the bundler's validation) reads the latest block's: on a quiet chain that mines
 * on demand it lags the wall clock, and a start "now" would read as not started
 * (`transfer-not-started`) until another block comes. docs/decisions.md ("A default start the
 * chain has reached").
 */
export const startOnChain = (now: Date, headSeconds: number): Date =>
  new Date(Math.min(Math.floor(now.getTime() / 1000), headSeconds) * 1000)

/** The period `now` falls in: its start and end (the next start); before `start`, the first period. */
export const currentPeriod = (period: BudgetPeriod, now: Date): { readonly start: Date; readonly end: Date; readonly started: boolean } => {
  const start = new Date(period.start).getTime()
  const ms = period.seconds * 1000
  if (now.getTime() < start) return { start: new Date(start), end: new Date(start + ms), started: false }
  const index = Math.floor((now.getTime() - start) / ms)
  return { start: new Date(start + index * ms), end: new Date(start + (index + 1) * ms), started: true }
}

/**
 * A budget's period from the request, or why it is refused: exactly one of `every` or
 * `seconds`, a start on a whole second (default: now), and the first period must end by
 * the grant's expiry (else the budget would never renew).
 */
export const periodOf = (
  p: PeriodInput | undefined,
  symbol: string,
  /** The default start (the caller's "now": a time the chain has reached, `startOnChain`). */
  now: Date,
  expiresAt: Date
): BudgetPeriod | undefined | string => {
  if (p === undefined) return undefined
  if ((p.every === undefined) === (p.seconds === undefined)) return `the period of ${symbol} needs exactly one of every or seconds`
  const seconds = p.every === undefined ? p.seconds! : PERIOD_SECONDS[p.every]
  if (!Number.isInteger(seconds) || seconds < 1) return `the period of ${symbol} must be a whole number of seconds`
  const start = p.start === undefined ? new Date(Math.floor(now.getTime() / 1000) * 1000) : new Date(p.start)
  if (Number.isNaN(start.getTime())) return `the period start of ${symbol} is not a valid timestamp`
  if (start.getTime() % 1000 !== 0) return `the period start of ${symbol} must be a whole second (the chain counts seconds)`
  if (start.getTime() < 1000) return `the period start of ${symbol} must be after 1970-01-01T00:00:01Z`
  if (start.getTime() + seconds * 1000 > expiresAt.getTime()) {
    return `the period of ${symbol} (${seconds} s from ${start.toISOString()}) does not fit before the grant expires at ${expiresAt.toISOString()}: ` +
      "a period must end by the expiry, or the budget would never renew"
  }
  return { every: p.every ?? "seconds", seconds, start: start.toISOString() }
}
