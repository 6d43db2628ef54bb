/**
 * The batched append statements (docs/audit-log.md, "Group commit"): several entries of one
 * account in ONE call of `audit_append_many` (migration 0191), which locks the head once,
 * chains them in order exactly as `audit_append` chains one, and answers one row per entry;
 * entries of several accounts in ONE call of `audit_append_accounts` (migration 0193), one
 * `audit_append_many` per account. `AuditChain.ts` decides which and turns rows into results.
 */
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { type AuditRecord, GENESIS_HASH } from "./Chain.ts"

/** An entry checked and encoded, waiting for its place in the chain. */
export interface Prepared {
  readonly record: AuditRecord
  readonly occurredAt: Date
  /** `encodingAroundHead(record)`: the canonical JSON cut around auditNonce, index, prevHash. */
  readonly parts: ReadonlyArray<string>
}

/** One entry's outcome: its place in the chain, or (all NULL) the entry that already holds its id. */
const ManyRow = Schema.Struct({
  ord: Schema.Number,
  chain_index: Schema.NullOr(Schema.Number),
  audit_nonce: Schema.NullOr(Schema.Number),
  prev_hash: Schema.NullOr(Schema.String),
  hash: Schema.NullOr(Schema.String),
  existing_id: Schema.NullOr(Schema.String)
})
/** One row of either batch function. */
export type BatchRow = typeof ManyRow.Type

const decodeManyRows = Schema.decodeUnknownEffect(Schema.Array(ManyRow))

/**
 * A PostgreSQL array literal: every element quoted (backslash before `"` and `\`), NULL
 * for null, so it parses back to exactly these strings. Numbers go as `String(n)`, the
 * shortest text that reads back as the same double (`1e+21`, `1e-7`).
 */
export const pgArray = (values: ReadonlyArray<string | number | null>): string =>
  `{${values.map((v) => v === null ? "NULL" : `"${String(v).replace(/["\\]/g, (c) => `\\${c}`)}"`).join(",")}}`

/** The entry columns of `batch`, one array literal each, in the order both batch functions take them. */
const columns = (batch: ReadonlyArray<Prepared>): Array<string> => {
  const column = (f: (p: Prepared) => string | number | null) => pgArray(batch.map(f))
  return [
    column((p) => p.record.id), column((p) => p.record.operationId), column((p) => p.record.declineId),
    column((p) => p.occurredAt.toISOString()), column((p) => p.record.actor), column((p) => p.record.action),
    column((p) => p.record.amount), column((p) => p.record.token), column((p) => p.record.chain),
    column((p) => p.record.chainId), column((p) => p.record.status), column((p) => p.record.declineReason),
    column((p) => p.record.provenance), column((p) => p.record.txHash), column((p) => p.record.delegationId),
    column((p) => p.record.recipient), column((p) => p.parts[0]!), column((p) => p.parts[1]!),
    column((p) => p.parts[2]!), column((p) => p.parts[3]!)
  ]
}

const checked = (rows: ReadonlyArray<BatchRow>, entries: number, fn: string) =>
  rows.length === entries && rows.every((row, i) => row.ord === i + 1)
    ? Effect.succeed(rows)
    : Effect.die(new Error(`${fn} answered ${rows.length} rows for ${entries} entries`))

/**
 * Runs `audit_append_many` for `batch` (entries of `accountId`, in chain order) and returns
 * its rows, one per entry, in order. Each column goes as one array literal, bound untyped
 * as strings are, so PostgreSQL parses it as the parameter's array type (an all-NULL column
 * needs no element type, which a typed array parameter would). Runs on its own: never in
 * a caller's transaction (AuditChain only batches appends made outside one).
 */
export const appendManyRows = (sql: SqlClient.SqlClient, accountId: string, batch: ReadonlyArray<Prepared>) => {
  const c = columns(batch)
  return sql`SELECT ord, chain_index, audit_nonce, prev_hash, hash, existing_id FROM audit_append_many(
      ${accountId}, ${GENESIS_HASH}, ${c[0]!}, ${c[1]!}, ${c[2]!}, ${c[3]!}, ${c[4]!}, ${c[5]!}, ${c[6]!}, ${c[7]!},
      ${c[8]!}, ${c[9]!}, ${c[10]!}, ${c[11]!}, ${c[12]!}, ${c[13]!}, ${c[14]!}, ${c[15]!}, ${c[16]!}, ${c[17]!},
      ${c[18]!}, ${c[19]!})`.pipe(
    Effect.flatMap(decodeManyRows),
    Effect.flatMap((rows) => checked(rows, batch.length, "audit_append_many"))
  )
}

/**
 * Runs `audit_append_accounts` (migration 0193) for `batch`: entries of several accounts,
 * each account's contiguous and in chain order, the accounts in ascending order. One row
 * per entry, in order. A head lock not granted within `lockTimeout` fails the statement
 * (nothing of it is written).
 */
export const appendAccountsRows = (sql: SqlClient.SqlClient, batch: ReadonlyArray<Prepared>, lockTimeout: string) => {
  const c = columns(batch)
  return sql`SELECT ord, chain_index, audit_nonce, prev_hash, hash, existing_id FROM audit_append_accounts(
      ${pgArray(batch.map((p) => p.record.accountId))}, ${GENESIS_HASH}, ${c[0]!}, ${c[1]!}, ${c[2]!}, ${c[3]!},
      ${c[4]!}, ${c[5]!}, ${c[6]!}, ${c[7]!}, ${c[8]!}, ${c[9]!}, ${c[10]!}, ${c[11]!}, ${c[12]!}, ${c[13]!},
      ${c[14]!}, ${c[15]!}, ${c[16]!}, ${c[17]!}, ${c[18]!}, ${c[19]!}, ${lockTimeout})`.pipe(
    Effect.flatMap(decodeManyRows),
    Effect.flatMap((rows) => checked(rows, batch.length, "audit_append_accounts"))
  )
}

/** The innermost error's message (PostgreSQL's own words, under the driver's wrappers). */
export const rootMessage = (error: unknown): string => {
  let message = String(error)
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) message = e.message
  return message
}
