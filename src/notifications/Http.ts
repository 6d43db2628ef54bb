/**
 * The notifications group's handlers (thin; the rules live in `Notifications`), plus
 * the depeg monitor, which runs for as long as the handlers are served. Needs only
 * infrastructure: SqlClient + PgClient (the stream listener), HttpClient (the price source);
 * also runs the webhook delivery worker.
 */
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { currentPeerKey } from "../platform/ClientAddress.ts"
import { WebhookDeliveryLive } from "./webhooks/Delivery.ts"
import { Webhooks } from "./webhooks/Webhooks.ts"
import { BudgetAlertsLive } from "./BudgetAlerts.ts"
import { DepegMonitorLive } from "./DepegMonitor.ts"
import { NotificationHub, NotificationHubLive } from "./NotificationHub.ts"
import { Notifications } from "./Notifications.ts"
import { NotificationsApi } from "./Api.ts"

const Handlers = HttpApiBuilder.group(
  contractOf(NotificationsApi),
  "notifications",
  Effect.fn(function*(handlers) {
    const notifications = yield* Notifications
    const hub = yield* NotificationHub
    const webhooks = yield* Webhooks
    const signer = Effect.map(CurrentSigner, (s) => s.address)
    return handlers
      .handle("list", ({ query }) =>
        Effect.flatMap(CurrentSigner, (s) => notifications.list(s.address, { unreadOnly: query.unreadOnly, chainId: query.chainId })))
      .handle("stream", ({ headers }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const lastEventId = yield* hub.parseLastEventId(headers["last-event-id"])
          const clientAddress = yield* currentPeerKey
          yield* hub.admit(signer.address, clientAddress)
          return HttpServerResponse.stream(hub.sse(signer.address, lastEventId, clientAddress), {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
          })
        }))
      .handle("createWebhook", ({ payload }) => Effect.flatMap(signer, (s) => webhooks.create(s, payload.url)))
      .handle("listWebhooks", () => Effect.flatMap(signer, webhooks.list))
      .handle("deleteWebhook", ({ params }) => Effect.flatMap(signer, (s) => webhooks.remove(s, params.endpointId)))
      .handle("rotateWebhookSecret", ({ params }) =>
        Effect.flatMap(signer, (s) => webhooks.rotateSecret(s, params.endpointId)))
      .handle("webhookDeliveries", ({ params }) => Effect.flatMap(signer, (s) => webhooks.deliveries(s, params.endpointId)))
      .handle("replayWebhookDelivery", ({ params }) =>
        Effect.flatMap(signer, (s) => webhooks.replay(s, params.deliveryId)))
      .handle("readAll", () => Effect.flatMap(CurrentSigner, (s) => Effect.asVoid(notifications.readAll(s.address))))
      .handle("markRead", ({ params }) =>
        Effect.flatMap(CurrentSigner, (s) => notifications.markRead(s.address, params.notificationId)))
  })
)

export const NotificationsHandlers = Layer.mergeAll(Handlers, DepegMonitorLive, WebhookDeliveryLive, BudgetAlertsLive).pipe(
  Layer.provide(Notifications.layer),
  Layer.provide(NotificationHubLive),
  Layer.provide(Webhooks.layer)
)
