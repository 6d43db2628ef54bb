/**
 * The activity feed: the signer's audit entries as `AuditEvent`s.
 *
 * One account (`accountId`): pages are newest first by chain position. The cursor is the
 * position of the last entry of the page (bound to its account); the next page is
 * everything strictly before it. Appends only ever add positions above the first page, so
 * paging never repeats or skips an entry however many are appended meanwhile.
 *
 * Several chains (no `accountId`: the signer's lowest visible account on every served
 * chain, or on `chainId`): each account's entries are read newest first by position, as
 * above, and merged newest first by time (positions follow time within an account). The
 * cursor holds each account's position after its last entry shown, so the same guarantee
 * holds for every account of the merge.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { BadRequest, type Conflict, NotFound } from "../api/Errors.ts"
import { Accounts } from "../accounts/Accounts.ts"
import type { Address } from "../domain/Primitives.ts"
import { entryColumns, EntryRow, fromRow } from "../audit/AuditChain.ts"
import { toAuditEvent } from "../audit/Wire.ts"
import { Anchor } from "../anchor/Anchor.ts"
import type { ActivityPage, AnchorStatus, AuditEvent, AuditProof } from "../audit/Domain.ts"
import { makeEntryProof } from "../audit/EntryProof.ts"

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
  readonly chainId?: number | undefined
}

/** Kept here for existing importers; the mapping lives in Wire.ts. */
export { toAuditEvent }

/**
 * Opaque to clients: base64url of `<accountId>:<position>` for one account, and of
 * `<accountId>:<position>` pairs joined by `,` for a merge of several (`0`: that account is done).
 */
export const encodeCursor = (positions: ReadonlyArray<readonly [string, number]>) =>
  Buffer.from(positions.map(([a, i]) => `${a}:${i}`).join(","), "utf8").toString("base64url")

/** Each account's position (entries strictly before it are next); undefined unless it names exactly these accounts. */
export const decodeCursor = (cursor: string, accountIds: ReadonlyArray<string>): ReadonlyMap<string, number> | undefined => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const parts = text.split(",")
  if (parts.length !== accountIds.length) return undefined
  const positions = new Map<string, number>()
  for (const part of parts) {
    const at = part.lastIndexOf(":")
    if (at < 0) return undefined
    const index = Number(part.slice(at + 1))
    if (!Number.isSafeInteger(index) || index < 0) return undefined
    positions.set(part.slice(0, at), index)
  }
  return accountIds.every((a) => positions.has(a)) ? positions : undefined
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
        const scoped = yield* accounts.resolveAll(signer, { accountId: query.accountId, chainId: query.chainId })
        const ids = scoped.map((a) => a.id)
        const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor, ids)
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
        // Each account's next `limit + 1` entries (none for an account the cursor says is done).
        const pages = yield* Effect.forEach(ids, (accountId) => {
          const position = before?.get(accountId)
          if (position === 0) return Effect.succeed([])
          const where = [
            sql`account_id = ${accountId}`,
            ...(position === undefined ? [] : [sql`chain_index < ${position}`]),
            ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
            ...(query.delegationId === undefined ? [] : [sql`delegation_id = ${query.delegationId}`]),
            ...(from === undefined ? [] : [sql`occurred_at >= ${from}`]),
            ...(to === undefined ? [] : [sql`occurred_at < ${to}`])
          ]
          return sql`SELECT ${sql.literal(entryColumns)} FROM audit_entries WHERE ${sql.and(where)}
                     ORDER BY chain_index DESC LIMIT ${query.limit + 1}`.pipe(
            Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(EntryRow))),
            Effect.orDie,
            Effect.map((rows) => rows.map(fromRow))
          )
        }, { concurrency: "unbounded" })
        // Newest first across accounts (by time; an account's own entries keep their order).
        const merged = pages.flatMap((rows, k) => rows.map((e, i) => ({ e, k, i })))
          .sort((x, y) => y.e.timestamp.localeCompare(x.e.timestamp) || x.k - y.k || x.i - y.i)
        const page = merged.slice(0, query.limit)
        const hasMore = merged.length > query.limit
        if (!hasMore) return { items: page.map((p) => toAuditEvent(p.e)), pageInfo: { hasMore: false } }
        // Each account's position after its last entry shown; one with nothing left is done (0).
        const positions = ids.map((accountId, k): readonly [string, number] => {
          const shown = page.filter((p) => p.k === k)
          const last = shown.at(-1)
          if (last !== undefined) return [accountId, last.e.index]
          const untouched = before?.get(accountId)
          return [accountId, pages[k]!.length === 0 ? 0 : untouched ?? pages[k]![0]!.index + 1]
        })
        return {
          items: page.map((p) => toAuditEvent(p.e)),
          pageInfo: { hasMore, nextCursor: encodeCursor(positions) }
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
          ...(summary.anchoredLengths === undefined ? {} : { accounts: summary.anchoredLengths }),
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
