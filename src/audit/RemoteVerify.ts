/**
 * Verifying an account's audit chain from the HTTP API alone (docs/audit-log.md,
 * "Verifying over HTTP"): page `GET /activity` newest first to the start, rebuild every
 * entry's hashed record from its response fields (Wire.ts), and walk the chain with the
 * same `verifyChain` the service uses. No database, no service code beyond the pure
 * modules: `scripts/audit-verify-remote.ts` is the command around it.
 */
import { Schema } from "effect"
import { type ChainHead, type StoredEntry, verifyChain, type VerifyResult } from "./Chain.ts"
import { ActivityPage, AnchorStatus } from "./Domain.ts"
import { recordOfEvent } from "./Wire.ts"

export interface RemoteVerifyOptions {
  /** The service's base URL (with `/v1` if you use that prefix). */
  readonly url: string
  /** A session token of the account's signer. */
  readonly token: string
  /** The account; the signer's default account when absent. */
  readonly accountId?: string | undefined
  /** Entries per page (1..100). */
  readonly pageSize?: number | undefined
}

export interface RemoteVerifyResult {
  readonly accountId: string | undefined
  readonly entries: ReadonlyArray<StoredEntry>
  readonly result: VerifyResult
  /** The default account's anchored head, checked against the chain (only without `accountId`). */
  readonly anchor?: { readonly length: number; readonly headHash: string; readonly matches: boolean } | undefined
}

const decodePage = Schema.decodeUnknownSync(ActivityPage)
const decodeAnchor = Schema.decodeUnknownSync(AnchorStatus)

const getJson = async (url: string, token: string): Promise<unknown> => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  const text = await res.text()
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status} ${text}`)
  return JSON.parse(text)
}

/** Every entry of the account, oldest first, as the API shows them. */
export const fetchEntries = async (options: RemoteVerifyOptions): Promise<ReadonlyArray<StoredEntry>> => {
  const base = options.url.replace(/\/+$/, "")
  const pages: Array<StoredEntry> = []
  let cursor: string | undefined
  for (;;) {
    const query = new URLSearchParams({ limit: String(options.pageSize ?? 100) })
    if (options.accountId !== undefined) query.set("accountId", options.accountId)
    if (cursor !== undefined) query.set("cursor", cursor)
    const page = decodePage(await getJson(`${base}/activity?${query}`, options.token))
    pages.push(...page.items.map(recordOfEvent))
    if (!page.pageInfo.hasMore || page.pageInfo.nextCursor === undefined) break
    cursor = page.pageInfo.nextCursor
  }
  return pages.reverse()
}

/**
 * Rebuilds and walks the chain; names the first broken link. HTTP shows no head row, so
 * the walk's end is taken as the head: a deleted tail is only visible against an anchor
 * (checked for the default account) or a head hash you kept.
 */
export const verifyRemote = async (options: RemoteVerifyOptions): Promise<RemoteVerifyResult> => {
  const entries = await fetchEntries(options)
  const accountId = options.accountId ?? entries[0]?.accountId
  const last = entries.at(-1)
  const head: ChainHead | undefined = last === undefined ? undefined : {
    length: entries.length,
    headHash: last.hash,
    executedCount: entries.filter((e) => e.status === "executed").length
  }
  const result = verifyChain(accountId ?? "", entries, head)
  if (options.accountId !== undefined) return { accountId, entries, result }
  const status = decodeAnchor(await getJson(`${options.url.replace(/\/+$/, "")}/activity/anchor`, options.token))
  if (status.anchoredHead === undefined || status.anchoredLength === undefined) return { accountId, entries, result }
  const at = entries[status.anchoredLength - 1]
  const anchor = { length: status.anchoredLength, headHash: status.anchoredHead, matches: at?.hash === status.anchoredHead }
  if (!result.ok || anchor.matches) return { accountId, entries, result, anchor }
  return {
    accountId,
    entries,
    anchor,
    result: {
      ok: false,
      length: Math.min(entries.length, anchor.length - 1),
      broken: {
        kind: "head",
        index: anchor.length,
        message: `anchored at length ${anchor.length} with head ${anchor.headHash}, ` +
          (at === undefined ? `the chain now has ${entries.length} entries` : `the chain now has ${at.hash} at #${anchor.length}`)
      }
    }
  }
}
