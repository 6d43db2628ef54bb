/**
 * Does a chain still extend every head that was anchored of it? Pure: the anchorer
 * (before it anchors a moved head), `AuditChain.verify` and `npm run audit:verify`
 * share it (docs/audit-log.md, "Anchoring that pins history").
 *
 * An anchor commits (length, head hash): the entry at position `length` must still
 * carry that hash. A rewrite that re-hashes every later entry and the head row passes
 * the chain walk, but not this: the anchored hash is on chain. The rewritten entry lies
 * after the last anchored length that still matches and at or before the first one that
 * does not; when those are adjacent, the entry is named exactly.
 */

/** One anchored (length, head hash) of an account. */
export interface AnchoredPoint {
  readonly length: number
  readonly headHash: string
}

export interface Rewrite {
  /** The earliest entry that can have been rewritten (after the last matching anchor). */
  readonly from: number
  /** The anchored length that no longer matches. */
  readonly anchoredLength: number
  readonly anchoredHead: string
  /** What the chain now has at `anchoredLength` (undefined: the chain is shorter). */
  readonly current: string | undefined
  readonly message: string
}

/**
 * Checks `hashes` (the account's entry hashes in chain order, position i + 1 at i)
 * against every anchored point; the first (shortest) one that fails is reported.
 */
export const checkAnchored = (
  hashes: ReadonlyArray<string>,
  anchored: ReadonlyArray<AnchoredPoint>
): Rewrite | undefined => checkAnchoredAt(hashes.length, (position) => hashes[position - 1], anchored)

/**
 * `checkAnchored` over a chain of `length` entries of which the caller read only some:
 * `hashAt(position)` must answer for every anchored length (undefined: no such entry).
 */
export const checkAnchoredAt = (
  length: number,
  hashAt: (position: number) => string | undefined,
  anchored: ReadonlyArray<AnchoredPoint>
): Rewrite | undefined => {
  const points = [...anchored].sort((a, b) => a.length - b.length)
  let matched = 0
  for (const p of points) {
    const current = p.length <= length ? hashAt(p.length) : undefined
    if (current === p.headHash) {
      matched = p.length
      continue
    }
    const from = matched + 1
    const which = from === p.length
      ? `entry #${p.length} was rewritten after it was anchored`
      : `an entry in #${from}..#${p.length} was rewritten after it was anchored` +
        (matched > 0 ? ` (the anchor at length ${matched} still matches)` : "")
    const now = current === undefined
      ? `the chain now has only ${length} entries`
      : `the chain now has ${current} at #${p.length}`
    return {
      from,
      anchoredLength: p.length,
      anchoredHead: p.headHash,
      current,
      message: `${which}: anchored at length ${p.length} with head ${p.headHash}, ${now}`
    }
  }
  return undefined
}
