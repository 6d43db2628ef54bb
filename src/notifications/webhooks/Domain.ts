import { Schema } from "effect"
import { Text, Timestamp } from "../../domain/Primitives.ts"

export const WebhookEndpoint = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  createdAt: Timestamp,
  rotatedAt: Schema.NullOr(Timestamp)
}).annotate({ identifier: "WebhookEndpoint" })
export type WebhookEndpoint = typeof WebhookEndpoint.Type

/** Answered once, at creation and at rotation: the signing secret is never shown again. */
export const WebhookEndpointWithSecret = Schema.Struct({
  ...WebhookEndpoint.fields,
  secret: Schema.String
}).annotate({ identifier: "WebhookEndpointWithSecret" })
export type WebhookEndpointWithSecret = typeof WebhookEndpointWithSecret.Type

export const CreateWebhookRequest = Schema.Struct({ url: Text }).annotate({ identifier: "CreateWebhookRequest" })

export const WebhookAttempt = Schema.Struct({
  attempt: Schema.Int,
  at: Timestamp,
  statusCode: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.Int
}).annotate({ identifier: "WebhookAttempt" })

export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  endpointId: Schema.String,
  notificationId: Schema.String,
  status: Schema.Literals(["pending", "delivered", "dead"]),
  attempts: Schema.Int,
  nextAttemptAt: Schema.NullOr(Timestamp),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  deliveredAt: Schema.NullOr(Timestamp),
  attemptLog: Schema.Array(WebhookAttempt)
}).annotate({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type
