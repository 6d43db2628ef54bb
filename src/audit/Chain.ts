/**
 * The audit chain's pure core: the stored record, its canonical encoding, its hash
 * and the walk that verifies a chain. No I/O here, so the verify command, the
 * service and the tests share exactly one definition (docs/audit-log.md).
 *
 * Canonical encoding: RFC 8785 (JSON Canonicalization Scheme) of the record below,
 * every field present (absent values are `null`; `recipient` only when set): keys sorted, no whitespace,
 * ECMAScript number form. Hash: `0x` + lowercase hex SHA-256 of its UTF-8 bytes.
 */
import canonicalize from "canonicalize"
import { createHash } from "node:crypto"

/** The hash a chain's first entry links to. */
export const GENESIS_HASH = `0x${"0".repeat(64)}`

/** Every stored field of an entry except its own hash. */
export interface AuditRecord {
  readonly id: string
  readonly accountId: string
  /** 1-based position in the account's chain. */
  readonly index: number
  readonly operationId: string | null
  readonly declineId: string | null
  /** The stored instant: UTC, always 6 fractional digits (PostgreSQL's precision). */
  readonly timestamp: string
  readonly actor: string
  readonly action: string
  readonly amount: number | null
  readonly token: string | null
  readonly chain: string
  readonly chainId: number
  readonly status: string
  readonly declineReason: string | null
  readonly provenance: string
  readonly txHash: string | null
  readonly auditNonce: number | null
  readonly delegationId: string | null
  /**
   * Where the money went (an address), on entries that moved it. Added after the first
   * entries were written: the encoding carries it only when set, so older entries hash as before.
   */
  readonly recipient: string | null
  readonly prevHash: string
}

export interface StoredEntry extends AuditRecord {
  readonly hash: string
}

/**
 * RFC 8785 canonical JSON (the `canonicalize` package, the reference implementation's author):
 * keys sorted by UTF-16 code units, no whitespace, ECMAScript number form; a non-finite number,
 * a lone surrogate or a value with no JSON form is refused. Every stored entry hashes as it did
 * under the hand-written encoder this replaced (test/audit/Canonical.test.ts).
 */
export const canonicalJson = (value: unknown): string => {
  const text = canonicalize(value)
  if (text === undefined) throw new Error(`canonical JSON: a value of type ${typeof value} has no JSON form`)
  return text
}

/** The exact object that is encoded: every field, in no particular order (the encoding sorts). */
const recordObject = (r: AuditRecord) => ({
  accountId: r.accountId,
  action: r.action,
  actor: r.actor,
  amount: r.amount,
  auditNonce: r.auditNonce,
  chain: r.chain,
  chainId: r.chainId,
  declineId: r.declineId,
  declineReason: r.declineReason,
  delegationId: r.delegationId,
  id: r.id,
  index: r.index,
  operationId: r.operationId,
  prevHash: r.prevHash,
  provenance: r.provenance,
  status: r.status,
  timestamp: r.timestamp,
  token: r.token,
  txHash: r.txHash,
  ...(r.recipient === null ? {} : { recipient: r.recipient })
})

export const canonicalEncoding = (r: AuditRecord): string => canonicalJson(recordObject(r))

export const hashRecord = (r: AuditRecord): string =>
  `0x${createHash("sha256").update(canonicalEncoding(r), "utf8").digest("hex")}`

/** A JS Date (millisecond precision) as the stored canonical timestamp (microsecond form). */
export const canonicalTimestamp = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z")

/** The stored canonical timestamp as the wire's ISO 8601 with milliseconds. */
export const wireTimestamp = (canonical: string): string => canonical.replace(/\.(\d{3})\d{3}Z$/, ".$1Z")

/** What the chain head row claims: entries so far, the last hash, executed entries so far. */
export interface ChainHead {
  readonly length: number
  readonly headHash: string
  readonly executedCount: number
}

export type BrokenLink =
  | { readonly kind: "missing"; readonly index: number; readonly message: string }
  | {
    readonly kind: "hash" | "link" | "nonce" | "index" | "account"
    readonly index: number
    readonly entryId: string
    readonly message: string
  }
  | { readonly kind: "head"; readonly index: number; readonly message: string }
  /** The chain walks, but no longer extends a head that was anchored on chain (Anchored.ts). */
  | { readonly kind: "rewrite"; readonly index: number; readonly message: string }

export type VerifyResult =
  | { readonly ok: true; readonly length: number; readonly headHash: string }
  | { readonly ok: false; readonly length: number; readonly broken: BrokenLink }

/**
 * Walks one account's entries (in stored `index` order) and names the first broken
 * link. Checks, per entry: its position follows the previous one (no gap, no
 * duplicate), it belongs to the account, it links to the previous entry's hash, its
 * hash is the hash of its fields, and its audit nonce is the next executed count.
 * Finally the walk must end where the head row says the chain ends (a deleted tail).
 */
export const verifyChain = (
  accountId: string,
  entries: ReadonlyArray<StoredEntry>,
  head: ChainHead | undefined
): VerifyResult => {
  let prevHash = GENESIS_HASH
  let executed = 0
  const fail = (broken: BrokenLink, length: number): VerifyResult => ({ ok: false, length, broken })
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!
    const expected = i + 1
    if (e.index !== expected) {
      return e.index > expected
        ? fail({ kind: "missing", index: expected, message: `entry #${expected} is missing (next stored is #${e.index})` }, i)
        : fail({ kind: "index", index: e.index, entryId: e.id, message: `entry #${e.index} (${e.id}) appears twice or out of order` }, i)
    }
    if (e.accountId !== accountId) {
      return fail({ kind: "account", index: expected, entryId: e.id, message: `entry #${expected} (${e.id}) belongs to ${e.accountId}` }, i)
    }
    if (e.prevHash !== prevHash) {
      return fail({
        kind: "link",
        index: expected,
        entryId: e.id,
        message: `entry #${expected} (${e.id}) links to ${e.prevHash}, but the previous entry's hash is ${prevHash}`
      }, i)
    }
    const computed = hashRecord(e)
    if (computed !== e.hash) {
      return fail({
        kind: "hash",
        index: expected,
        entryId: e.id,
        message: `entry #${expected} (${e.id}) stores hash ${e.hash}, but its fields hash to ${computed}`
      }, i)
    }
    const expectedNonce = e.status === "executed" ? executed + 1 : null
    if (e.auditNonce !== expectedNonce) {
      return fail({
        kind: "nonce",
        index: expected,
        entryId: e.id,
        message: `entry #${expected} (${e.id}) has audit nonce ${e.auditNonce}, expected ${expectedNonce}`
      }, i)
    }
    if (e.status === "executed") executed++
    prevHash = e.hash
  }
  const length = entries.length
  if (head === undefined) {
    return length === 0 ? { ok: true, length, headHash: prevHash } : fail({
      kind: "head",
      index: length,
      message: "the chain has entries but no head row"
    }, length)
  }
  if (head.length !== length || head.headHash !== prevHash || head.executedCount !== executed) {
    return fail({
      kind: "head",
      index: Math.min(head.length, length) + 1,
      message: `the head says ${head.length} entries ending in ${head.headHash} (${head.executedCount} executed); ` +
        `the chain has ${length} ending in ${prevHash} (${executed} executed)`
    }, length)
  }
  return { ok: true, length, headHash: prevHash }
}
