import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotFoundError, NotImplementedError, OutOfScopeError } from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { withDefault, Id } from "../domain/Primitives.ts"
import { Notification } from "./Domain.ts"

export class NotificationsApi extends HttpApiGroup.make("notifications")
  .add(
    HttpApiEndpoint.get("list", "/notifications", {
      query: { unreadOnly: withDefault(Schema.Boolean, false) },
      success: Schema.Array(Notification),
      error: NotImplementedError
    }),
    // Declared before `/notifications/:notificationId/read` for the same reason as `/activity/anchor`.
    HttpApiEndpoint.post("readAll", "/notifications/read-all", {
      success: HttpApiSchema.NoContent,
      error: NotImplementedError
    }),
    HttpApiEndpoint.post("markRead", "/notifications/:notificationId/read", {
      params: { notificationId: Id },
      success: Notification,
      error: [NotFoundError, OutOfScopeError, NotImplementedError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Notifications", description: "The signer's alerts feed." }))
{}
