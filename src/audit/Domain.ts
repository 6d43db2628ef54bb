import { Schema } from "effect"
import { ChainId, Hash32, Timestamp } from "../domain/Primitives.ts"

/**
 * An audit entry on the wire: every field its hash covers (docs/audit-log.md, "Verifying
 * over HTTP"), so a client can recompute the hash and the links from responses alone.
 */
export const AuditEvent = Schema.Struct({
  id: Schema.String,
  /** The account whose chain holds the entry. */
  accountId: Schema.String,
  /** 1-based position in the account's chain. */
  index: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  /** The operation the entry settles (absent on declines that are not operations). */
  operationId: Schema.optionalKey(Schema.String),
  /** The decline id (absent on entries that settle an operation). */
  declineId: Schema.optionalKey(Schema.String),
  /** Millisecond precision; the hash covers the stored microsecond form (`.123Z` → `.123000Z`). */
  timestamp: Timestamp,
  /** The exact hashed timestamp, only when the stored one has sub-millisecond digits. */
  hashedTimestamp: Schema.optionalKey(Schema.String),
  dateLabel: Schema.optionalKey(Schema.String),
  timeLabel: Schema.optionalKey(Schema.String),
  actor: Schema.String,
  action: Schema.String,
  amount: Schema.optionalKey(Schema.Finite),
  token: Schema.optionalKey(Schema.String),
  chain: Schema.String,
  chainId: ChainId,
  status: Schema.String,
  declineReason: Schema.optionalKey(Schema.String),
  provenance: Schema.String,
  txHash: Schema.optionalKey(Hash32),
  auditNonce: Schema.optionalKey(Schema.Int),
  /** The previous entry's hash (`0x` + 64 zeros on the first entry); always present. */
  prevHash: Schema.String,
  hash: Schema.String,
  delegationId: Schema.optionalKey(Schema.String),
  /** Where the money went, on entries that moved it. */
  recipient: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "AuditEvent" })
export type AuditEvent = typeof AuditEvent.Type

export const PageInfo = Schema.Struct({
  nextCursor: Schema.optionalKey(Schema.String),
  hasMore: Schema.Boolean
}).annotate({ identifier: "PageInfo" })

export const ActivityPage = Schema.Struct({
  items: Schema.Array(AuditEvent),
  pageInfo: PageInfo
}).annotate({ identifier: "ActivityPage" })
export type ActivityPage = typeof ActivityPage.Type

export const AnchorStatus = Schema.Struct({
  available: Schema.Boolean,
  unanchoredCount: Schema.Int,
  anchoredHead: Schema.optionalKey(Schema.String),
  /** Of the latest anchor covering the default account: the chain length it anchored. */
  anchoredLength: Schema.optionalKey(Schema.Int),
  merkleRoot: Schema.optionalKey(Hash32),
  txHash: Schema.optionalKey(Hash32),
  /** Decimal block number of the anchor transaction. */
  blockNumber: Schema.optionalKey(Schema.String),
  anchoredAt: Schema.optionalKey(Timestamp),
  /**
   * Beyond the contract: each of the signer's accounts with the length of its chain the latest anchor
   * covers (entries with `index` up to it have a proof; on a rewritten chain, only those before the
   * rewrite). A client asks for a proof only then: before it the answer is a 409.
   */
  accounts: Schema.optionalKey(Schema.Array(Schema.Struct({ accountId: Schema.String, anchoredLength: Schema.Int }))),
  /**
   * Beyond the contract: a rewrite of anchored history, detected now (the default account's, else
   * another of the signer's): its chain no longer holds an anchored head. `from`: the earliest
   * entry that may have been rewritten; `anchoredLength` / `anchoredHead`: the anchor it breaks;
   * `current`: what the chain has at that position now (absent: the chain is shorter).
   */
  rewrite: Schema.optionalKey(Schema.Struct({
    accountId: Schema.String,
    from: Schema.Int,
    anchoredLength: Schema.Int,
    anchoredHead: Schema.String,
    current: Schema.optionalKey(Schema.String),
    message: Schema.String
  }))
}).annotate({ identifier: "AnchorStatus" })
export type AnchorStatus = typeof AnchorStatus.Type

/** An account's chain head as an anchor committed it (one leaf of the anchor's tree). */
export const AnchoredHeadWire = Schema.Struct({
  accountId: Schema.String,
  length: Schema.Int,
  headHash: Hash32,
  /** RFC 6962 root over the account's first `length` entry hashes. */
  entriesRoot: Hash32
}).annotate({ identifier: "AnchoredHead" })

/**
 * Everything needed to prove an entry is under a root anchored on chain
 * (docs/audit-log.md, "Proving an entry"): the entry, its RFC 6962 audit path to the
 * account's entries root, the anchored head that root belongs to, and that head's
 * proof to the anchor's Merkle root, committed by `txHash`.
 */
export const AuditProof = Schema.Struct({
  event: AuditEvent,
  /** 0-based leaf index: the entry's `index` − 1. */
  leafIndex: Schema.Int,
  /** Leaves of the account's tree: the anchored length. */
  treeSize: Schema.Int,
  auditPath: Schema.Array(Hash32),
  entriesRoot: Hash32,
  anchoredHead: AnchoredHeadWire,
  anchor: Schema.Struct({
    merkleRoot: Hash32,
    /** Sibling hashes from the head's leaf to the root (Merkle.ts: sorted pairs, no flags). */
    proof: Schema.Array(Hash32),
    txHash: Hash32,
    blockNumber: Schema.String,
    chainId: ChainId,
    anchoredAt: Timestamp
  })
}).annotate({ identifier: "AuditProof" })
export type AuditProof = typeof AuditProof.Type
