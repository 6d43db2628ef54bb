/**
 * The signer's alerts feed: executed actions, blocks (declined or failed
 * operations) and depeg drift. Every read and write is scoped to one signer; another
 * signer's notification is answered as if it did not exist.
 *
 * `notify*` write with the ambient SqlClient, so inside a caller's
 * `sql.withTransaction` the notification commits (or rolls back) with the caller's
 * change — `AuditRecorder` relies on that to raise a block alert together with its
 * audit entry.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NotFound } from "../api/Errors.ts"
import { normalizeAddress } from "../accounts/Accounts.ts"
import type { Address } from "../domain/Primitives.ts"
import type { Notification } from "./Domain.ts"

/** Tones: `danger` (a block, a failure, a depeg), `warning`, `success` (an executed action), `info`. */
export type Tone = "danger" | "warning" | "success" | "info"

export interface NotifyInput {
  readonly tone: Tone
  readonly title: string
  readonly body: string
  /** `activity` (relatedId: an audit event id), `delegation`, `depeg` (relatedId: an excursion id). */
  readonly relatedType?: string | null | undefined
  readonly relatedId?: string | null | undefined
  /** A frontend deep link, e.g. `{ label: "View activity", target: "activity/<eventId>" }`. */
  readonly action?: { readonly label: string; readonly target: string } | null | undefined
}

/** How many notifications `list` returns at most (newest first): the contract's answer is an unpaged array. */
export const LIST_LIMIT = 200

export const NotificationRow = Schema.Struct({
  id: Schema.String,
  tone: Schema.String,
  title: Schema.String,
  body: Schema.String,
  created_at: Schema.Date,
  read_at: Schema.NullOr(Schema.Date),
  related_type: Schema.NullOr(Schema.String),
  related_id: Schema.NullOr(Schema.String),
  action_label: Schema.NullOr(Schema.String),
  action_target: Schema.NullOr(Schema.String),
  chain_id: Schema.NullOr(Schema.Number)
})
export type NotificationRow = typeof NotificationRow.Type

/** The chain a notification is about: its account's (none for a signer-wide one, e.g. a depeg). */
export const columns = "id, tone, title, body, created_at, read_at, related_type, related_id, action_label, action_target, " +
  "(SELECT a.chain_id FROM accounts a WHERE a.id = notifications.account_id) AS chain_id"

/** A short relative label ("just now", "5 min ago", "3 h ago", "2 d ago"), then the date. */
export const relativeLabel = (createdAt: Date, now: number): string => {
  const s = Math.max(0, Math.floor((now - createdAt.getTime()) / 1000))
  if (s < 60) return "just now"
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`
  if (s < 30 * 86_400) return `${Math.floor(s / 86_400)} d ago`
  return createdAt.toISOString().slice(0, 10)
}

export const toNotification = (row: NotificationRow, now: number): Notification => ({
  id: row.id,
  tone: row.tone,
  title: row.title,
  body: row.body,
  createdAt: row.created_at.toISOString(),
  read: row.read_at !== null,
  timeLabel: relativeLabel(row.created_at, now),
  relatedType: row.related_type,
  relatedId: row.related_id,
  action: row.action_label !== null && row.action_target !== null
    ? { label: row.action_label, target: row.action_target }
    : null,
  chainId: row.chain_id
})

const newId = () => `ntf_${crypto.randomUUID()}`

export class Notifications extends Context.Service<Notifications, {
  /** One notification for one signer. */
  readonly notify: (signer: Address, input: NotifyInput) => Effect.Effect<Notification>
  /** One notification for the signer that owns `accountId` (dies if there is no such account). */
  readonly notifyAccount: (accountId: string, input: NotifyInput) => Effect.Effect<Notification>
  /** The same notification for every signer that has an account; returns how many were written. */
  readonly notifyAllSigners: (input: NotifyInput) => Effect.Effect<number>
  readonly list: (
    signer: Address,
    options?: { readonly unreadOnly?: boolean; readonly chainId?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<Notification>>
  readonly markRead: (signer: Address, id: string) => Effect.Effect<Notification, NotFound>
  readonly readAll: (signer: Address) => Effect.Effect<number>
}>()("das/notifications/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const values = (input: NotifyInput) => ({
        tone: input.tone,
        title: input.title,
        body: input.body,
        relatedType: input.relatedType ?? null,
        relatedId: input.relatedId ?? null,
        actionLabel: input.action?.label ?? null,
        actionTarget: input.action?.target ?? null
      })

      const decodeOne = Schema.decodeUnknownEffect(NotificationRow)

      const notify = Effect.fn("Notifications.notify")(function*(signer: Address, input: NotifyInput) {
        const v = values(input)
        const now = new Date(yield* Clock.currentTimeMillis)
        const rows = yield* sql`
          INSERT INTO notifications (id, signer_address, tone, title, body, created_at, related_type, related_id,
            action_label, action_target)
          VALUES (${newId()}, ${normalizeAddress(signer)}, ${v.tone}, ${v.title}, ${v.body}, ${now}, ${v.relatedType},
            ${v.relatedId}, ${v.actionLabel}, ${v.actionTarget})
          RETURNING ${sql.literal(columns)}`
        return toNotification(yield* decodeOne(rows[0]), now.getTime())
      }, Effect.orDie)

      const notifyAccount = Effect.fn("Notifications.notifyAccount")(function*(accountId: string, input: NotifyInput) {
        const v = values(input)
        const now = new Date(yield* Clock.currentTimeMillis)
        const rows = yield* sql`
          INSERT INTO notifications (id, signer_address, account_id, tone, title, body, created_at, related_type,
            related_id, action_label, action_target)
          SELECT ${newId()}, signer_address, id, ${v.tone}, ${v.title}, ${v.body}, ${now}, ${v.relatedType},
            ${v.relatedId}, ${v.actionLabel}, ${v.actionTarget}
          FROM accounts WHERE id = ${accountId}
          RETURNING ${sql.literal(columns)}`
        if (rows.length === 0) return yield* Effect.die(new Error(`Notifications.notifyAccount: no account ${accountId}`))
        return toNotification(yield* decodeOne(rows[0]), now.getTime())
      }, Effect.orDie)

      const notifyAllSigners = Effect.fn("Notifications.notifyAllSigners")(function*(input: NotifyInput) {
        const v = values(input)
        const now = new Date(yield* Clock.currentTimeMillis)
        const rows = yield* sql`
          INSERT INTO notifications (id, signer_address, tone, title, body, created_at, related_type, related_id,
            action_label, action_target)
          SELECT 'ntf_' || gen_random_uuid(), s.signer_address, ${v.tone}, ${v.title}, ${v.body}, ${now},
            ${v.relatedType}, ${v.relatedId}, ${v.actionLabel}, ${v.actionTarget}
          FROM (SELECT DISTINCT signer_address FROM accounts) s
          RETURNING id`
        return rows.length
      }, Effect.orDie)

      const listRows = SqlSchema.findAll({
        Request: Schema.Struct({ signer: Schema.String, unreadOnly: Schema.Boolean, chainId: Schema.NullOr(Schema.Number) }),
        Result: NotificationRow,
        execute: ({ chainId, signer, unreadOnly }) =>
          sql`SELECT ${sql.literal(columns)} FROM notifications
              WHERE signer_address = ${signer} ${unreadOnly ? sql`AND read_at IS NULL` : sql``}
              ${chainId === null ? sql`` : sql`AND account_id IN (SELECT id FROM accounts WHERE signer_address = ${signer} AND chain_id = ${chainId})`}
              ORDER BY created_at DESC, id DESC LIMIT ${LIST_LIMIT}`
      })

      const list = Effect.fn("Notifications.list")(function*(
        signer: Address,
        options?: { readonly unreadOnly?: boolean; readonly chainId?: number | undefined }
      ) {
        const rows = yield* listRows({
          signer: normalizeAddress(signer),
          unreadOnly: options?.unreadOnly ?? false,
          chainId: options?.chainId ?? null
        })
        const now = yield* Clock.currentTimeMillis
        return rows.map((r) => toNotification(r, now))
      }, Effect.orDie)

      const markReadRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ signer: Schema.String, id: Schema.String }),
        Result: NotificationRow,
        execute: ({ id, signer }) =>
          // Idempotent: a notification already read keeps the time it was first read.
          sql`UPDATE notifications SET read_at = COALESCE(read_at, now())
              WHERE id = ${id} AND signer_address = ${signer}
              RETURNING ${sql.literal(columns)}`
      })

      const markRead = Effect.fn("Notifications.markRead")(function*(signer: Address, id: string) {
        const row = yield* markReadRow({ signer: normalizeAddress(signer), id }).pipe(Effect.orDie)
        if (row._tag === "None") return yield* new NotFound({ message: `No notification ${id}` })
        return toNotification(row.value, yield* Clock.currentTimeMillis)
      })

      const readAll = Effect.fn("Notifications.readAll")(function*(signer: Address) {
        const rows = yield* sql`UPDATE notifications SET read_at = now()
                                WHERE signer_address = ${normalizeAddress(signer)} AND read_at IS NULL RETURNING id`
        return rows.length
      }, Effect.orDie)

      return Notifications.of({ notify, notifyAccount, notifyAllSigners, list, markRead, readAll })
    })
  )
}
