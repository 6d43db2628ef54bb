/**
 * A signer's webhook endpoints (create, list, delete, rotate the secret), their deliveries
 * with every attempt, and the replay of a dead (or delivered) delivery. Every read and write
 * is scoped to one signer; another signer's endpoint or delivery is answered as if it did
 * not exist. The signing secret is answered at creation and at rotation only.
 *
 * Deliveries themselves are written by the `notifications_push` trigger (migration 0170) in
 * the notification's own transaction, and sent by `WebhookDelivery`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { BadRequest, NotFound } from "../../api/Errors.ts"
import { normalizeAddress } from "../../accounts/Accounts.ts"
import type { Address } from "../../domain/Primitives.ts"
import type { WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret } from "./Domain.ts"
import { newSecret } from "./Signature.ts"
import { acceptTarget, TargetPolicyConfig } from "./UrlGuard.ts"

/** Most live endpoints one signer may hold. */
export const MAX_ENDPOINTS = 20
/** Most deliveries answered per endpoint (newest first). */
export const DELIVERIES_LIMIT = 100

const EndpointRow = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  created_at: Schema.Date,
  rotated_at: Schema.NullOr(Schema.Date)
})
const DeliveryRow = Schema.Struct({
  id: Schema.String,
  endpoint_id: Schema.String,
  notification_id: Schema.String,
  status: Schema.Literals(["pending", "delivered", "dead"]),
  attempts: Schema.Number,
  next_attempt_at: Schema.Date,
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  delivered_at: Schema.NullOr(Schema.Date)
})
const AttemptRow = Schema.Struct({
  delivery_id: Schema.String,
  attempt: Schema.Number,
  at: Schema.Date,
  status_code: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.Number
})
const decodeEndpoints = Schema.decodeUnknownEffect(Schema.Array(EndpointRow))
const decodeDeliveries = Schema.decodeUnknownEffect(Schema.Array(DeliveryRow))
const decodeAttempts = Schema.decodeUnknownEffect(Schema.Array(AttemptRow))

const toEndpoint = (r: typeof EndpointRow.Type): WebhookEndpoint => ({
  id: r.id,
  url: r.url,
  createdAt: r.created_at.toISOString(),
  rotatedAt: r.rotated_at?.toISOString() ?? null
})

const deliveryColumns =
  "id, endpoint_id, notification_id, status, attempts, next_attempt_at, last_error, created_at, delivered_at"

const notFoundEndpoint = (id: string) => new NotFound({ message: `No webhook endpoint ${id}` })

export class Webhooks extends Context.Service<Webhooks, {
  create(signer: Address, url: string): Effect.Effect<WebhookEndpointWithSecret, BadRequest>
  list(signer: Address): Effect.Effect<ReadonlyArray<WebhookEndpoint>>
  remove(signer: Address, endpointId: string): Effect.Effect<void, NotFound>
  rotateSecret(signer: Address, endpointId: string): Effect.Effect<WebhookEndpointWithSecret, NotFound>
  deliveries(signer: Address, endpointId: string): Effect.Effect<ReadonlyArray<WebhookDelivery>, NotFound>
  /** Sends a dead or delivered delivery again, with the full number of tries; a pending one is answered as is. */
  replay(signer: Address, deliveryId: string): Effect.Effect<WebhookDelivery, NotFound>
}>()("das/webhooks/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const policy = yield* TargetPolicyConfig

      const withAttempts = Effect.fn("Webhooks.withAttempts")(function*(rows: ReadonlyArray<typeof DeliveryRow.Type>) {
        if (rows.length === 0) return []
        const attempts = yield* decodeAttempts(
          yield* sql`SELECT delivery_id, attempt, at, status_code, error, duration_ms FROM webhook_attempts
                     WHERE delivery_id IN ${sql.in(rows.map((r) => r.id))} ORDER BY attempt`
        )
        return rows.map((r): WebhookDelivery => ({
          id: r.id,
          endpointId: r.endpoint_id,
          notificationId: r.notification_id,
          status: r.status,
          attempts: r.attempts,
          nextAttemptAt: r.status === "pending" ? r.next_attempt_at.toISOString() : null,
          lastError: r.last_error,
          createdAt: r.created_at.toISOString(),
          deliveredAt: r.delivered_at?.toISOString() ?? null,
          attemptLog: attempts.filter((a) => a.delivery_id === r.id).map((a) => ({
            attempt: a.attempt,
            at: a.at.toISOString(),
            statusCode: a.status_code,
            error: a.error,
            durationMs: a.duration_ms
          }))
        }))
      }, Effect.orDie)

      const create = Effect.fn("Webhooks.create")(function*(signer: Address, raw: string) {
        // Stored as it will be called: the URL parser's serialization, or a 400.
        const target = yield* Effect.promise(() => acceptTarget(raw, policy))
        if (target._tag === "Refused") return yield* new BadRequest({ message: target.problem, details: { field: "url" } })
        const url = target.url
        const owner = normalizeAddress(signer)
        const secret = newSecret()
        const rows = yield* sql`
          INSERT INTO webhook_endpoints (id, signer_address, url, secret)
          SELECT ${`whe_${crypto.randomUUID()}`}, ${owner}, ${url}, ${secret}
          WHERE (SELECT count(*) FROM webhook_endpoints WHERE signer_address = ${owner} AND deleted_at IS NULL)
                < ${MAX_ENDPOINTS}
          RETURNING id, url, created_at, rotated_at`.pipe(Effect.orDie)
        const [row] = yield* decodeEndpoints(rows).pipe(Effect.orDie)
        if (row === undefined) return yield* new BadRequest({ message: `A signer may register at most ${MAX_ENDPOINTS} webhook endpoints.` })
        return { ...toEndpoint(row), secret }
      })

      const list = Effect.fn("Webhooks.list")(function*(signer: Address) {
        const rows = yield* decodeEndpoints(
          yield* sql`SELECT id, url, created_at, rotated_at FROM webhook_endpoints
                     WHERE signer_address = ${normalizeAddress(signer)} AND deleted_at IS NULL ORDER BY created_at, id`
        )
        return rows.map(toEndpoint)
      }, Effect.orDie)

      const remove = Effect.fn("Webhooks.remove")(function*(signer: Address, endpointId: string) {
        const gone = yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql`UPDATE webhook_endpoints SET deleted_at = now()
                                  WHERE id = ${endpointId} AND signer_address = ${normalizeAddress(signer)}
                                    AND deleted_at IS NULL RETURNING id`
          if (rows.length === 0) return false
          yield* sql`UPDATE webhook_deliveries SET status = 'dead', last_error = 'endpoint deleted', leased_until = NULL
                     WHERE endpoint_id = ${endpointId} AND status = 'pending'`
          return true
        })).pipe(Effect.orDie)
        if (!gone) return yield* notFoundEndpoint(endpointId)
      })

      const rotateSecret = Effect.fn("Webhooks.rotateSecret")(function*(signer: Address, endpointId: string) {
        const secret = newSecret()
        const rows = yield* decodeEndpoints(
          yield* sql`UPDATE webhook_endpoints SET secret = ${secret}, rotated_at = now()
                     WHERE id = ${endpointId} AND signer_address = ${normalizeAddress(signer)} AND deleted_at IS NULL
                     RETURNING id, url, created_at, rotated_at`.pipe(Effect.orDie)
        ).pipe(Effect.orDie)
        if (rows[0] === undefined) return yield* notFoundEndpoint(endpointId)
        return { ...toEndpoint(rows[0]), secret }
      })

      const deliveries = Effect.fn("Webhooks.deliveries")(function*(signer: Address, endpointId: string) {
        const owned = yield* sql`SELECT 1 FROM webhook_endpoints WHERE id = ${endpointId}
                                 AND signer_address = ${normalizeAddress(signer)} AND deleted_at IS NULL`.pipe(Effect.orDie)
        if (owned.length === 0) return yield* notFoundEndpoint(endpointId)
        const rows = yield* decodeDeliveries(
          yield* sql`SELECT ${sql.literal(deliveryColumns)} FROM webhook_deliveries WHERE endpoint_id = ${endpointId}
                     ORDER BY created_at DESC, id DESC LIMIT ${DELIVERIES_LIMIT}`.pipe(Effect.orDie)
        ).pipe(Effect.orDie)
        return yield* withAttempts(rows)
      })

      const replay = Effect.fn("Webhooks.replay")(function*(signer: Address, deliveryId: string) {
        const owner = normalizeAddress(signer)
        yield* sql`UPDATE webhook_deliveries d SET status = 'pending', replayed_from = d.attempts, next_attempt_at = now(),
                     leased_until = NULL, last_error = NULL, delivered_at = NULL
                   FROM webhook_endpoints e
                   WHERE d.id = ${deliveryId} AND d.signer_address = ${owner} AND d.status <> 'pending'
                     AND e.id = d.endpoint_id AND e.deleted_at IS NULL`.pipe(Effect.orDie)
        const rows = yield* decodeDeliveries(
          yield* sql`SELECT ${sql.literal(deliveryColumns.split(", ").map((c) => `d.${c}`).join(", "))}
                     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
                     WHERE d.id = ${deliveryId} AND d.signer_address = ${owner} AND e.deleted_at IS NULL`.pipe(Effect.orDie)
        ).pipe(Effect.orDie)
        if (rows.length === 0) return yield* new NotFound({ message: `No webhook delivery ${deliveryId}` })
        return (yield* withAttempts(rows))[0]!
      })

      return Webhooks.of({ create, list, remove, rotateSecret, deliveries, replay })
    })
  )
}

