import { Schema } from "effect"
import { ChainId, Hash32, Timestamp } from "../domain/Primitives.ts"

export const AuditEvent = Schema.Struct({
  id: Schema.String,
  timestamp: Timestamp,
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
  prevHash: Schema.optionalKey(Schema.String),
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
  anchoredHead: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "AnchorStatus" })
export type AnchorStatus = typeof AnchorStatus.Type
