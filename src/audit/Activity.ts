/**
 * The activity feed: the signer's audit entries as `AuditEvent`s.
 *
 * Pages are newest first by chain position. The cursor is the position of the last
 * entry of the page (bound to its account); the next page is everything strictly
 * before it. Appends only ever add positions above the first page, so paging never
 * repeats or skips an entry however many are appended meanwhile.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { BadRequest, type Conflict, NotFound } from "../api/Errors.ts"
import { Accounts } from "../accounts/Accounts.ts"
import type { Address } from "../domain/Primitives.ts"
import { entryColumns, EntryRow, fromRow } from "./AuditChain.ts"
import { toAuditEvent } from "./Wire.ts"
import { Anchor } from "../anchor/Anchor.ts"
import type { ActivityPage, AnchorStatus, AuditEvent, AuditProof } from "./Domain.ts"
import { makeEntryProof } from "./EntryProof.ts"

export interface ActivityQuery {
  readonly cursor?: string | undefined
  readonly limit: number
  readonly status?: string | undefined
  readonly delegationId?: string | undefined
  /** Inclusive lower bound on the event's timestamp. */
  readonly from?: string | undefined
  /** Exclusive upper bound on the event's timestamp. */
  readonly to?: string | undefined
  readonly accountId?: string | undefined
}

/** Kept here for existing importers; the mapping lives in Wire.ts. */
export { toAuditEvent }

/** Opaque to clients: base64url of `<accountId>:<position>`. */
export const encodeCursor = (accountId: string, index: number) =>
  Buffer.from(`${accountId}:${index}`, "utf8").toString("base64url")

export const decodeCursor = (cursor: string, accountId: string): number | undefined => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const at = text.lastIndexOf(":")
  if (at < 0 || text.slice(0, at) !== accountId) return undefined
  const index = Number(text.slice(at + 1))
  return Number.isSafeInteger(index) && index >= 1 ? index : undefined
}

export class Activity extends Context.Service<Activity, {
  readonly list: (signer: Address, query: ActivityQuery) => Effect.Effect<ActivityPage, BadRequest | NotFound>
  readonly get: (signer: Address, eventId: string) => Effect.Effect<AuditEvent, NotFound>
  /** The entry's inclusion proof up to an on-chain anchor (EntryProof.ts); 409 before its first anchor. */
  readonly proof: (signer: Address, eventId: string) => Effect.Effect<AuditProof, NotFound | Conflict>
  readonly anchor: (signer: Address) => Effect.Effect<AnchorStatus>
}>()("das/audit/Activity") {
  static readonly layer = Layer.effect(
    Activity,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const accounts = yield* Accounts
      const anchors = yield* Anchor

      const list = Effect.fn("Activity.list")(function*(signer: Address, query: ActivityQuery) {
        const account = yield* accounts.resolve(signer, query.accountId)
        const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor, account.id)
        if (query.cursor !== undefined && before === undefined) {
          return yield* new BadRequest({ message: "cursor is not a cursor of this activity list" })
        }
        const from = query.from === undefined ? undefined : new Date(query.from)
        const to = query.to === undefined ? undefined : new Date(query.to)
        // The wire pattern admits impossible dates (month 13); the database would refuse them as a 500.
        if ((from !== undefined && Number.isNaN(from.getTime())) || (to !== undefined && Number.isNaN(to.getTime()))) {
          return yield* new BadRequest({ message: "from and to must be real instants" })
        }
        if (from !== undefined && to !== undefined && from.getTime() > to.getTime()) {
          return yield* new BadRequest({ message: "from is after to" })
        }
        const where = [
          sql`account_id = ${account.id}`,
          ...(before === undefined ? [] : [sql`chain_index < ${before}`]),
          ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
          ...(query.delegationId === undefined ? [] : [sql`delegation_id = ${query.delegationId}`]),
          ...(from === undefined ? [] : [sql`occurred_at >= ${from}`]),
          ...(to === undefined ? [] : [sql`occurred_at < ${to}`])
        ]
        const rows = yield* sql`SELECT ${sql.literal(entryColumns)} FROM audit_entries WHERE ${sql.and(where)}
                                ORDER BY chain_index DESC LIMIT ${query.limit + 1}`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(EntryRow))),
          Effect.orDie
        )
        const page = rows.slice(0, query.limit).map(fromRow)
        const hasMore = rows.length > query.limit
        const last = page.at(-1)
        return {
          items: page.map(toAuditEvent),
          pageInfo: hasMore && last !== undefined
            ? { hasMore, nextCursor: encodeCursor(account.id, last.index) }
            : { hasMore: false }
        }
      })

      const findOwned = SqlSchema.findOneOption({
        Request: Schema.Struct({ signer: Schema.String, id: Schema.String }),
        Result: EntryRow,
        execute: ({ id, signer }) =>
          sql`SELECT ${sql.literal(entryColumns)} FROM audit_entries
              WHERE id = ${id} AND EXISTS (
                SELECT 1 FROM accounts a WHERE a.id = audit_entries.account_id AND a.signer_address = ${signer})`
      })

      const get = Effect.fn("Activity.get")(function*(signer: Address, eventId: string) {
        const row = yield* findOwned({ signer: signer.toLowerCase(), id: eventId }).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* new NotFound({ message: `No activity event ${eventId}` })
        return toAuditEvent(fromRow(row.value))
      })

      const entryProof = makeEntryProof(sql)
      const proof = Effect.fn("Activity.proof")(function*(signer: Address, eventId: string) {
        // The same scoping as `get`: another signer's event does not exist.
        const row = yield* findOwned({ signer: signer.toLowerCase(), id: eventId }).pipe(Effect.orDie)
        if (Option.isNone(row)) return yield* new NotFound({ message: `No activity event ${eventId}` })
        return yield* entryProof(fromRow(row.value))
      })

      const anchor = Effect.fn("Activity.anchor")(function*(signer: Address) {
        // Every account of the signer counts; the reported head is that of the account
        // reads default to (the lowest visible index).
        const mine = yield* accounts.list(signer)
        const primary = mine.find((a) => !a.hidden)
        const summary = yield* anchors.summary(mine.map((a) => a.id), primary?.id)
        return {
          available: summary.available,
          unanchoredCount: summary.unanchoredCount,
          ...(summary.anchoredHead === undefined ? {} : { anchoredHead: summary.anchoredHead }),
          ...(summary.latest === undefined ? {} : {
            anchoredLength: summary.latest.length,
            merkleRoot: summary.latest.merkleRoot,
            txHash: summary.latest.txHash,
            blockNumber: summary.latest.blockNumber,
            anchoredAt: summary.latest.anchoredAt
          }),
          ...(summary.rewrite === undefined ? {} : {
            rewrite: {
              accountId: summary.rewrite.accountId,
              from: summary.rewrite.from,
              anchoredLength: summary.rewrite.anchoredLength,
              anchoredHead: summary.rewrite.anchoredHead,
              ...(summary.rewrite.current === undefined ? {} : { current: summary.rewrite.current }),
              message: summary.rewrite.message
            }
          })
        } satisfies AnchorStatus
      })

      return Activity.of({ list, get, proof, anchor })
    })
  )
}
