import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequestError, NotFoundError, NotImplementedError } from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { PageLimit, Timestamp } from "../domain/Primitives.ts"
import { ActivityPage, AnchorStatus, AuditEvent } from "./Domain.ts"

export class ActivityApi extends HttpApiGroup.make("activity")
  .add(
    HttpApiEndpoint.get("list", "/activity", {
      query: {
        cursor: Schema.optionalKey(Schema.String),
        limit: PageLimit,
        status: Schema.optionalKey(Schema.String),
        delegationId: Schema.optionalKey(Schema.String),
        from: Schema.optionalKey(Timestamp),
        to: Schema.optionalKey(Timestamp),
        accountId: Schema.optionalKey(Schema.String)
      },
      success: ActivityPage,
      error: [BadRequestError, NotFoundError, NotImplementedError]
    }),
    // Declared before `/activity/:eventId` so the literal word `anchor` is never an event id.
    HttpApiEndpoint.get("anchor", "/activity/anchor", {
      success: AnchorStatus,
      error: NotImplementedError
    }),
    HttpApiEndpoint.get("get", "/activity/:eventId", {
      params: { eventId: Schema.String },
      success: AuditEvent,
      error: [NotFoundError, NotImplementedError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Activity", description: "The hash-chained audit log." }))
{}
