/**
 * Shared by every benchmark: the spread of a measure over rounds, and one machine-readable
 * line per goal (`BENCH_RESULT {...}`) that `bench/all.ts` (`npm run bench`) gathers into
 * one table.
 */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export const spread = (values: ReadonlyArray<number>): Spread => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]! }
}

export interface Result {
  /** What is measured, e.g. `GET /accounts`. */
  readonly path: string
  /** The service's figure (or the ratio itself when `unit` is `ratio`). */
  readonly service: number
  /** The baseline's figure measured in the same run (1 when `service` is already a ratio). */
  readonly baseline: number
  readonly unit: "ratio" | "req/s" | "ms" | "µs" | "MB" | "s"
  /** The goal in words, e.g. `≥ 0.9×`, `≤ +3 ms`. */
  readonly goal: string
  readonly met: boolean
  readonly spread?: Spread | undefined
}

export const report = (r: Result) => console.log(`BENCH_RESULT ${JSON.stringify(r)}`)

/** The q-quantile (0..1) of `values` by the nearest-rank method: a value that was measured. */
export const percentile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}
