/**
 * The per-account hash-chained audit log (docs/audit-log.md).
 *
 * Inside a caller's transaction, `append` is one more statement of it,
 * `SELECT … FROM audit_append(…)` (migrations 0110, 0184): the entry and the state change
 * it records commit together or not at all, and it is never batched with other appends.
 *
 * Outside a transaction, appends group-commit (`GroupCommit.ts`; docs/audit-log.md, "Group
 * commit"): appends arriving while one is in flight on the same account queue (FIFO) and go
 * out together, and such batches of different accounts waiting at the same time go out in
 * ONE statement, `audit_append_accounts(…)` (migrations 0191, 0193), that locks each head
 * once, chains each account's entries in order and answers one result per entry (so a
 * duplicate fails alone). If PostgreSQL refuses the statement as a whole, or one head is
 * held too long by someone else, each account's entries are written on their own.
 *
 * Either way appends on one account serialize on that account's `audit_heads` row
 * (`SELECT ... FOR UPDATE`); a statement locks the heads of several accounts in ascending
 * order of their ids. The database refuses a second entry for
 * the same operation (or decline id): `append` reports it as `AuditDuplicate` and writes
 * nothing.
 *
 * Callers run at PostgreSQL's default READ COMMITTED isolation: the head row read
 * after the lock is then the latest committed one.
 */
import { Clock, Context, Data, Effect, Exit, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import {
  type AuditRecord,
  canonicalTimestamp,
  type ChainHead,
  canonicalEncoding,
  GENESIS_HASH,
  type StoredEntry,
  verifyChain,
  type VerifyResult
} from "./Chain.ts"
import { type AnchoredPoint, checkAnchored } from "./Anchored.ts"
import type { Prepared } from "./AppendMany.ts"
import { entryColumns, EntryRow, fromRow } from "./EntryRow.ts"
import * as GroupCommit from "./GroupCommit.ts"

/**
 * Outcomes an entry records. `executed` entries are the ones that get an audit nonce. The steps of
 * an approval request or a grant change request (src/approvals) are `pending`, `approved`,
 * `denied`, `expired`, `spent` (its approvals executed: the action's own entry has the same
 * transaction) and `accepted`.
 */
export type AuditStatus =
  | "executed"
  | "declined"
  | "failed"
  | "reorged"
  | "pending"
  | "approved"
  | "denied"
  | "expired"
  | "spent"
  | "accepted"

/**
 * Where the evidence of the event lives: `onchain` when a transaction exists (executed,
 * or reverted on chain) and the relay carried it, `onchain_unrelayed` when it reached the
 * chain around the relay (found by the chain follower), `onchain_reorg` for the entry that
 * compensates an earlier one whose block left the chain, `offchain_only` when nothing
 * reached the chain (a policy decline, a bundler rejection).
 */
export type Provenance = "onchain" | "onchain_unrelayed" | "onchain_reorg" | "offchain_only"

export interface AppendInput {
  readonly accountId: string
  /** The operation this entry settles; exactly one of `operationId` / `declineId`. */
  readonly operationId?: string | undefined
  /** For events that are not operations (a decline at build time): the caller's unique id for it. */
  readonly declineId?: string | undefined
  /** Who acted: `owner`, or the delegatee's address, ... */
  readonly actor: string
  /** What was attempted, e.g. the intent type (`send`, `delegation_revoke`, ...). */
  readonly action: string
  readonly amount?: number | undefined
  readonly token?: string | undefined
  readonly chain: string
  readonly chainId: number
  readonly status: AuditStatus
  /** Required on `declined`; allowed on `failed` (the bundler's or the chain's reason). */
  readonly declineReason?: string | undefined
  /** Defaults to `onchain` when `txHash` is given, `offchain_only` otherwise. */
  readonly provenance?: Provenance | undefined
  readonly txHash?: string | undefined
  readonly delegationId?: string | undefined
  /** Where the money went, when the entry moved money. */
  readonly recipient?: string | undefined
}

/** A second entry for an operation (or decline id) that already has one. Nothing was written. */
export class AuditDuplicate extends Data.TaggedError("AuditDuplicate")<{
  readonly operationId: string | null
  readonly declineId: string | null
  readonly existingId: string
}> {
  override get message() {
    return `operation ${this.operationId ?? this.declineId} already has audit entry ${this.existingId}`
  }
}

export { entryColumns, EntryRow, fromRow } from "./EntryRow.ts"

const AppendedRow = Schema.Struct({
  chain_index: Schema.Number,
  audit_nonce: Schema.NullOr(Schema.Number),
  prev_hash: Schema.String,
  hash: Schema.String
})

/**
 * The record's canonical encoding cut around the three values only the locked head knows,
 * in key order `auditNonce`, `index`, `prevHash`: four pieces the database joins with them
 * (migration 0110). Placeholders are fresh random strings, each of which must occur once.
 */
export const encodingAroundHead = (record: AuditRecord): ReadonlyArray<string> => {
  const mark = crypto.randomUUID()
  const nonce = `@n${mark}`
  const index = `@i${mark}`
  const prev = `@p${mark}`
  const text = canonicalEncoding({ ...record, auditNonce: nonce as never, index: index as never, prevHash: prev })
  const holes = [`"${nonce}"`, `"${index}"`, `"${prev}"`]
  const parts: Array<string> = []
  let rest = text
  for (const hole of holes) {
    const at = rest.indexOf(hole)
    if (at < 0 || rest.indexOf(hole, at + 1) >= 0) throw new Error("AuditChain: canonical encoding holes out of order")
    parts.push(rest.slice(0, at))
    rest = rest.slice(at + hole.length)
  }
  parts.push(rest)
  return parts
}

const HeadRow = Schema.Struct({ length: Schema.Number, head_hash: Schema.String, executed_count: Schema.Number })

const invalid = (message: string) => Effect.die(new Error(`AuditChain.append: ${message}`))

/**
 * Checks the input and encodes everything but what only the locked head knows; a string
 * is why the input is invalid (a defect of the caller).
 */
const prepare = (input: AppendInput, now: number): Prepared | string => {
  const operationId = input.operationId ?? null
  const declineId = input.declineId ?? null
  if ((operationId === null) === (declineId === null)) return "exactly one of operationId and declineId is required"
  if (input.status === "declined" && input.declineReason === undefined) return "a declined entry needs a declineReason"
  if (input.status === "executed" && input.declineReason !== undefined) return "an executed entry has no declineReason"
  // What the wire shows must be valid on the wire (AuditEvent's txHash, chainId, amount).
  if (input.txHash !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(input.txHash)) return `txHash ${input.txHash} is not 0x + 64 hex`
  if (!Number.isSafeInteger(input.chainId) || input.chainId < 1) return `chainId ${input.chainId}`
  if (input.amount !== undefined && !Number.isFinite(input.amount)) return "amount is not finite"
  // PostgreSQL text cannot hold U+0000: refused here rather than by the statement.
  for (const key in input) {
    const value = input[key as keyof AppendInput]
    if (typeof value === "string" && value.includes("\u0000")) return `${key} contains U+0000`
  }
  // Everything but what only the locked head knows; the holes are filled in SQL.
  const record: AuditRecord = {
    id: `evt_${crypto.randomUUID()}`,
    accountId: input.accountId,
    index: 0,
    operationId,
    declineId,
    timestamp: canonicalTimestamp(new Date(now)),
    actor: input.actor,
    action: input.action,
    amount: input.amount ?? null,
    token: input.token ?? null,
    chain: input.chain,
    chainId: input.chainId,
    status: input.status,
    declineReason: input.declineReason ?? null,
    provenance: input.provenance ?? (input.txHash !== undefined ? "onchain" : "offchain_only"),
    txHash: input.txHash ?? null,
    auditNonce: null,
    delegationId: input.delegationId ?? null,
    recipient: input.recipient ?? null,
    prevHash: GENESIS_HASH
  }
  return { record, occurredAt: new Date(now), parts: encodingAroundHead(record) }
}

export { BATCH_LOCK_TIMEOUT, MAX_BATCH } from "./GroupCommit.ts"

export class AuditChain extends Context.Service<AuditChain, {
  /**
   * Appends one entry to its account's chain: inside the caller's transaction when one is
   * open, otherwise committed on its own or with other appends waiting at the same time
   * (group commit).
   */
  readonly append: (input: AppendInput) => Effect.Effect<StoredEntry, AuditDuplicate>
  /** Every entry of an account's chain, in chain order. */
  readonly entries: (accountId: string) => Effect.Effect<ReadonlyArray<StoredEntry>>
  readonly head: (accountId: string) => Effect.Effect<Option.Option<ChainHead>>
  /** Walks the chain and names the first broken link, then checks it against every anchored head. */
  readonly verify: (accountId: string) => Effect.Effect<VerifyResult>
}>()("das/audit/AuditChain") {
  static readonly layer = Layer.effect(
    AuditChain,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const readHead = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: HeadRow,
        execute: (accountId) => sql`SELECT length, head_hash, executed_count FROM audit_heads WHERE account_id = ${accountId}`
      })

      const readEntries = SqlSchema.findAll({
        Request: Schema.String,
        Result: EntryRow,
        execute: (accountId) =>
          sql`SELECT ${sql.literal(entryColumns)} FROM audit_entries WHERE account_id = ${accountId} ORDER BY chain_index`
      })

      const existing = SqlSchema.findOneOption({
        Request: Schema.Struct({ operationId: Schema.NullOr(Schema.String), declineId: Schema.NullOr(Schema.String) }),
        Result: Schema.Struct({ id: Schema.String }),
        execute: ({ declineId, operationId }) =>
          operationId !== null
            ? sql`SELECT id FROM audit_entries WHERE operation_id = ${operationId}`
            : sql`SELECT id FROM audit_entries WHERE decline_id = ${declineId}`
      })

      const appendRow = SqlSchema.findAll({
        Request: Schema.Tuple([
          Schema.String, Schema.String, Schema.NullOr(Schema.String), Schema.NullOr(Schema.String), Schema.Date,
          Schema.String, Schema.String, Schema.NullOr(Schema.Number), Schema.NullOr(Schema.String), Schema.String,
          Schema.Number, Schema.String, Schema.NullOr(Schema.String), Schema.String, Schema.NullOr(Schema.String),
          Schema.NullOr(Schema.String), Schema.NullOr(Schema.String), Schema.String, Schema.String, Schema.String,
          Schema.String, Schema.String, Schema.NullOr(Schema.String)
        ]),
        Result: AppendedRow,
        // The last element, when set, is a lock timeout for the head (`audit_append_timed`).
        execute: (a) =>
          a[22] === null
            ? sql`SELECT chain_index, audit_nonce, prev_hash, hash FROM audit_append(${a[0]}, ${a[1]}, ${a[2]}, ${a[3]},
            ${a[4]}, ${a[5]}, ${a[6]}, ${a[7]}, ${a[8]}, ${a[9]}, ${a[10]}, ${a[11]}, ${a[12]}, ${a[13]}, ${a[14]},
            ${a[15]}, ${a[16]}, ${a[17]}, ${a[18]}, ${a[19]}, ${a[20]}, ${a[21]})`
            : sql`SELECT chain_index, audit_nonce, prev_hash, hash FROM audit_append_timed(${a[0]}, ${a[1]}, ${a[2]},
            ${a[3]}, ${a[4]}, ${a[5]}, ${a[6]}, ${a[7]}, ${a[8]}, ${a[9]}, ${a[10]}, ${a[11]}, ${a[12]}, ${a[13]},
            ${a[14]}, ${a[15]}, ${a[16]}, ${a[17]}, ${a[18]}, ${a[19]}, ${a[20]}, ${a[21]}, ${a[22]})`
      })

      /** The stored entry, from what the head gave the prepared record. */
      const finish = (p: Prepared, written: typeof AppendedRow.Type): Effect.Effect<StoredEntry> => {
        const stored: StoredEntry = {
          ...p.record,
          index: written.chain_index,
          auditNonce: written.audit_nonce,
          prevHash: written.prev_hash,
          hash: written.hash
        }
        if ((p.record.status === "executed") !== (stored.auditNonce !== null)) {
          return invalid("audit nonce does not match the status")
        }
        return Effect.succeed(stored)
      }

      const duplicate = (p: Prepared, existingId: string | null) =>
        existingId === null
          ? invalid(`entry ${p.record.id} conflicted with no visible entry`)
          : Effect.fail(
            new AuditDuplicate({ operationId: p.record.operationId, declineId: p.record.declineId, existingId })
          )

      /**
       * One entry, one statement (`audit_append`): one more statement of the caller's
       * transaction when one is open, committed alone otherwise. With `lockTimeout`, the
       * statement gives up (an `SqlError`, nothing written) if the head is not granted in time.
       */
      const appendOneWithin = (p: Prepared, lockTimeout: string | null) => {
        const r = p.record
        return appendRow([
          r.id, r.accountId, r.operationId, r.declineId, p.occurredAt, r.actor, r.action, r.amount, r.token, r.chain,
          r.chainId, r.status, r.declineReason, r.provenance, r.txHash, r.delegationId, r.recipient, GENESIS_HASH,
          p.parts[0]!, p.parts[1]!, p.parts[2]!, p.parts[3]!, lockTimeout
        ]).pipe(
          Effect.flatMap((rows) => {
            const written = rows[0]
            if (written !== undefined) return finish(p, written)
            // A duplicate operation/decline id: the function wrote nothing.
            return Effect.flatMap(
              existing({ operationId: r.operationId, declineId: r.declineId }),
              (other) => duplicate(p, Option.isSome(other) ? other.value.id : null)
            )
          }),
          Effect.catchTag("SchemaError", Effect.die)
        )
      }
      const appendOne = (p: Prepared): Effect.Effect<StoredEntry, AuditDuplicate> =>
        appendOneWithin(p, null).pipe(Effect.catchTag("SqlError", Effect.die))

      const groupCommit = yield* GroupCommit.make({
        sql,
        appendOne,
        appendOneWithin: (p, lockTimeout) =>
          appendOneWithin(p, lockTimeout).pipe(
            Effect.map(Exit.succeed),
            Effect.catchTag("AuditDuplicate", (e) => Effect.succeed(Exit.fail(e)))
          ),
        result: (p, row) =>
          row.chain_index !== null && row.prev_hash !== null && row.hash !== null
            ? finish(p, { chain_index: row.chain_index, audit_nonce: row.audit_nonce, prev_hash: row.prev_hash, hash: row.hash })
            : duplicate(p, row.existing_id)
      })

      const append = Effect.fn("AuditChain.append")(function*(input: AppendInput) {
        const prepared = prepare(input, yield* Clock.currentTimeMillis)
        if (typeof prepared === "string") return yield* invalid(prepared)
        yield* Effect.annotateCurrentSpan({ accountId: input.accountId, status: input.status })
        // Inside the caller's transaction the entry commits (or rolls back) with it: never
        // batched with others. Otherwise it joins the account's group commit.
        const inTransaction = Option.isSome(yield* Effect.serviceOption(sql.transactionService))
        return yield* inTransaction ? appendOne(prepared) : groupCommit(prepared)
      })

      const entries = Effect.fn("AuditChain.entries")(function*(accountId: string) {
        const rows = yield* readEntries(accountId)
        return rows.map(fromRow)
      }, Effect.orDie)

      const head = Effect.fn("AuditChain.head")(function*(accountId: string) {
        const row = yield* readHead(accountId)
        return Option.map(row, (r): ChainHead => ({
          length: r.length,
          headHash: r.head_hash,
          executedCount: r.executed_count
        }))
      }, Effect.orDie)

      const anchoredPoints = (accountId: string) =>
        sql<{ length: number; head_hash: string }>`
          SELECT length, head_hash FROM audit_anchor_heads WHERE account_id = ${accountId} ORDER BY length`.pipe(
          Effect.map((rows) => rows.map((r): AnchoredPoint => ({ length: r.length, headHash: r.head_hash }))),
          Effect.orDie
        )

      const verify = Effect.fn("AuditChain.verify")(function*(accountId: string) {
        const read = Effect.all([head(accountId), entries(accountId), anchoredPoints(accountId)])
        // One snapshot for head and entries, so a concurrent append cannot look like a break.
        // Inside a caller's transaction, that transaction's view is the one to verify.
        const inTransaction = Option.isSome(yield* Effect.serviceOption(sql.transactionService))
        const [h, list, anchored] = inTransaction ? yield* read : yield* sql.withTransaction(
          Effect.andThen(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`, read)
        )
        const walked = verifyChain(accountId, list, Option.getOrUndefined(h))
        if (!walked.ok) return walked
        // A chain that walks can still be a rewrite: every head anchored of it must still be in it.
        const rewrite = checkAnchored(list.map((e) => e.hash), anchored)
        if (rewrite === undefined) return walked
        return {
          ok: false,
          length: rewrite.from - 1,
          broken: { kind: "rewrite", index: rewrite.from, message: rewrite.message }
        } satisfies VerifyResult
      }, Effect.orDie)

      return AuditChain.of({ append, entries, head, verify })
    })
  )
}
