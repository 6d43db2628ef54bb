/**
 * An audit entry between its stored form (Chain.ts, what the hash covers) and the wire
 * (`AuditEvent`), both ways. Pure: the service maps entries out with `toAuditEvent`, and
 * the HTTP-only verifiers rebuild the hashed record with `recordOfEvent`.
 *
 * The wire carries every hashed field. Absent optional fields are hashed as `null`
 * (`recipient`: left out of the encoding, as stored). The one field whose wire form
 * differs is `timestamp`: milliseconds on the wire, microseconds in the hash. Entries
 * the service writes have millisecond instants (`.123Z` is hashed as `.123000Z`); a
 * stored instant with sub-millisecond digits (only possible by writing the table by
 * hand) is shown exactly in `hashedTimestamp`, so the wire never hides it.
 */
import type { AuditEvent } from "./Domain.ts"
import { type StoredEntry, wireTimestamp } from "./Chain.ts"

const labels = (iso: string) => {
  const d = new Date(iso)
  return {
    dateLabel: d.toLocaleDateString("en-US", { month: "short", day: "numeric", year: "numeric", timeZone: "UTC" }),
    timeLabel: `${iso.slice(11, 16)} UTC`
  }
}

/** The stored (hashed) timestamp a wire timestamp stands for: `.123Z` → `.123000Z`. */
export const hashedTimestampOfWire = (wire: string): string => {
  const ms = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{3})Z$/.exec(wire)
  if (ms !== null) return `${ms[1]}.${ms[2]}000Z`
  // Not the service's form (no fraction, an offset): normalize through the instant.
  const d = new Date(wire)
  if (Number.isNaN(d.getTime())) throw new Error(`not a timestamp: ${wire}`)
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z")
}

export const toAuditEvent = (e: StoredEntry): AuditEvent => {
  const timestamp = wireTimestamp(e.timestamp)
  return {
    id: e.id,
    accountId: e.accountId,
    index: e.index,
    ...(e.operationId === null ? {} : { operationId: e.operationId }),
    ...(e.declineId === null ? {} : { declineId: e.declineId }),
    timestamp,
    ...(hashedTimestampOfWire(timestamp) === e.timestamp ? {} : { hashedTimestamp: e.timestamp }),
    ...labels(timestamp),
    actor: e.actor,
    action: e.action,
    ...(e.amount === null ? {} : { amount: e.amount }),
    ...(e.token === null ? {} : { token: e.token }),
    chain: e.chain,
    chainId: e.chainId,
    status: e.status,
    ...(e.declineReason === null ? {} : { declineReason: e.declineReason }),
    provenance: e.provenance,
    ...(e.txHash === null ? {} : { txHash: e.txHash }),
    ...(e.auditNonce === null ? {} : { auditNonce: e.auditNonce }),
    prevHash: e.prevHash,
    hash: e.hash,
    ...(e.delegationId === null ? {} : { delegationId: e.delegationId }),
    ...(e.recipient === null ? {} : { recipient: e.recipient })
  }
}

/** The stored record (and claimed hash) an `AuditEvent` shows, from its fields alone. */
export const recordOfEvent = (e: AuditEvent): StoredEntry => ({
  id: e.id,
  accountId: e.accountId,
  index: e.index,
  operationId: e.operationId ?? null,
  declineId: e.declineId ?? null,
  timestamp: e.hashedTimestamp ?? hashedTimestampOfWire(e.timestamp),
  actor: e.actor,
  action: e.action,
  amount: e.amount ?? null,
  token: e.token ?? null,
  chain: e.chain,
  chainId: e.chainId,
  status: e.status,
  declineReason: e.declineReason ?? null,
  provenance: e.provenance,
  txHash: e.txHash ?? null,
  auditNonce: e.auditNonce ?? null,
  delegationId: e.delegationId ?? null,
  recipient: e.recipient ?? null,
  prevHash: e.prevHash,
  hash: e.hash
})
