import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequestError, NotFoundError, OutOfScopeError, ServiceUnavailableError } from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { ChainId, Id, withDefault } from "../domain/Primitives.ts"
import { CreateWebhookRequest, WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret } from "./webhooks/Domain.ts"
import { Notification } from "./Domain.ts"

export class NotificationsApi extends HttpApiGroup.make("notifications")
  .add(
    HttpApiEndpoint.get("list", "/notifications", {
      query: {
        unreadOnly: withDefault(Schema.Boolean, false),
        // Beyond the contract: only those about one chain's accounts.
        chainId: Schema.optionalKey(ChainId)
      },
      success: Schema.Array(Notification),
    }),
    HttpApiEndpoint.get("stream", "/notifications/stream", {
      headers: { "last-event-id": Schema.optionalKey(Schema.String) },
      success: HttpApiSchema.StreamSse({ data: Notification }),
      error: [BadRequestError, ServiceUnavailableError]
    }).annotate(OpenApi.Description, "Server-sent events: each new notification of the signer (`id:` is its sequence number), "
      + "a heartbeat comment every 15 s; reconnect with `Last-Event-ID` to replay what was missed (bounded)."),
    HttpApiEndpoint.post("createWebhook", "/notifications/webhooks", {
      payload: CreateWebhookRequest,
      success: WebhookEndpointWithSecret.pipe(HttpApiSchema.status(201)),
      error: BadRequestError
    }).annotate(OpenApi.Description, "Registers an http(s) endpoint for the signer's notifications. The signing "
      + "`secret` is answered now and never again (rotate it to get a new one)."),
    HttpApiEndpoint.get("listWebhooks", "/notifications/webhooks", { success: Schema.Array(WebhookEndpoint) }),
    HttpApiEndpoint.delete("deleteWebhook", "/notifications/webhooks/:endpointId", {
      params: { endpointId: Id },
      success: HttpApiSchema.NoContent,
      error: NotFoundError
    }),
    HttpApiEndpoint.post("rotateWebhookSecret", "/notifications/webhooks/:endpointId/rotate-secret", {
      params: { endpointId: Id },
      success: WebhookEndpointWithSecret,
      error: NotFoundError
    }),
    HttpApiEndpoint.get("webhookDeliveries", "/notifications/webhooks/:endpointId/deliveries", {
      params: { endpointId: Id },
      success: Schema.Array(WebhookDelivery),
      error: NotFoundError
    }),
    HttpApiEndpoint.post("replayWebhookDelivery", "/notifications/webhooks/deliveries/:deliveryId/replay", {
      params: { deliveryId: Id },
      success: WebhookDelivery,
      error: NotFoundError
    }),
    // Declared before `/notifications/:notificationId/read` for the same reason as `/activity/anchor`.
    HttpApiEndpoint.post("readAll", "/notifications/read-all", {
      success: HttpApiSchema.NoContent,
    }),
    HttpApiEndpoint.post("markRead", "/notifications/:notificationId/read", {
      params: { notificationId: Id },
      success: Notification,
      error: [NotFoundError, OutOfScopeError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Notifications", description: "The signer's alerts feed." }))
{}
