/**
 * Pure rules of the launchpad: the merged order across chains, the page cut, and the
 * history range table. No effects here, so tests can check them against brute force.
 */
import type { PriceRange } from "./Api.ts"
import { chainRank } from "./Chains.ts"
import type { TokenRow, TokenSort } from "./LaunchpadUpstream.ts"

const keyOf = (sort: TokenSort, row: TokenRow): number =>
  sort === "volume24h" ? row.token.volume24hUsd : sort === "mcap" ? row.mcapInVirtual : row.createdAtMs

/**
 * Descending by the sort key (the same field the upstream sorts each chain by), ties by
 * chain (contract name order) then token address: a total order, so pages never overlap.
 */
export const compareRows = (sort: TokenSort) => (a: TokenRow, b: TokenRow): number => {
  const d = keyOf(sort, b) - keyOf(sort, a)
  if (d !== 0) return d
  const c = chainRank(a.token.chain) - chainRank(b.token.chain)
  if (c !== 0) return c
  return a.token.tokenAddress < b.token.tokenAddress ? -1 : a.token.tokenAddress > b.token.tokenAddress ? 1 : 0
}

/**
 * Page `page` (1-based) of the merge of per-chain lists. Each list must hold at least its
 * chain's top `page * pageSize` rows (or all of them): any row of the merged page is
 * within the top `page * pageSize` of its own chain.
 */
export const mergePage = (
  lists: ReadonlyArray<ReadonlyArray<TokenRow>>,
  sort: TokenSort,
  page: number,
  pageSize: number
): ReadonlyArray<TokenRow> => {
  // Upstream pages fetched moments apart may repeat a row that moved; keep its first copy.
  const seen = new Set<string>()
  const all: Array<TokenRow> = []
  for (const list of lists) {
    for (const row of list) {
      const id = `${row.token.chain}:${row.token.tokenAddress}`
      if (seen.has(id)) continue
      seen.add(id)
      all.push(row)
    }
  }
  all.sort(compareRows(sort))
  const start = (page - 1) * pageSize
  return all.slice(start, start + pageSize)
}

/** How many rows of one chain a merged page needs, and which upstream pages hold them. */
export const upstreamPlan = (page: number, pageSize: number, upstreamPageSize: number) => {
  const needed = page * pageSize
  const size = Math.min(needed, upstreamPageSize)
  return { needed, size, pages: Math.ceil(needed / size) }
}

export interface RangeSpec {
  readonly range: PriceRange
  readonly granularitySec: number
  /** Window length; `undefined` means since the token's creation. */
  readonly windowMs: number | undefined
}

const DAY = 86_400_000

/** Candle granularity (seconds, as vp-api takes it) and window for each contract range. */
export const rangeSpecs: Record<PriceRange, RangeSpec> = {
  "1D": { range: "1D", granularitySec: 300, windowMs: DAY },
  "1W": { range: "1W", granularitySec: 3_600, windowMs: 7 * DAY },
  "1M": { range: "1M", granularitySec: 14_400, windowMs: 30 * DAY },
  "1Y": { range: "1Y", granularitySec: 86_400, windowMs: 365 * DAY },
  "ALL": { range: "ALL", granularitySec: 86_400, windowMs: undefined }
}

/** The contract: an unrecognized range is treated as `1M`. Matching is exact (`1d` is not `1D`). */
export const parseRange = (raw: string | undefined): RangeSpec =>
  raw !== undefined && Object.hasOwn(rangeSpecs, raw) ? rangeSpecs[raw as PriceRange] : rangeSpecs["1M"]

/** Most candles one history request asks for (an `ALL` window longer than this keeps the latest). */
export const maxCandles = 1_000

export const historyWindow = (spec: RangeSpec, nowMs: number, createdAtMs: number) => {
  const g = spec.granularitySec * 1000
  const endMs = Math.floor(nowMs / g) * g + g
  const startMs = Math.max(
    spec.windowMs === undefined ? Math.floor(createdAtMs / g) * g : endMs - spec.windowMs - g,
    endMs - maxCandles * g
  )
  return { startMs, endMs, limit: Math.min(maxCandles, Math.ceil((endMs - startMs) / g)) }
}
