import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequestError, ConflictError, NotFoundError } from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { ChainId, Id, PageLimit, TextOfLength, Timestamp } from "../domain/Primitives.ts"
import { ActivityPage, AnchorStatus, AuditEvent, AuditProof } from "../audit/Domain.ts"

export class ActivityApi extends HttpApiGroup.make("activity")
  .add(
    HttpApiEndpoint.get("list", "/activity", {
      query: {
        cursor: Schema.optionalKey(TextOfLength(1, 512)),
        limit: PageLimit,
        status: Schema.optionalKey(TextOfLength(1, 64)),
        delegationId: Schema.optionalKey(Id),
        from: Schema.optionalKey(Timestamp),
        to: Schema.optionalKey(Timestamp),
        accountId: Schema.optionalKey(Id),
        // Beyond the contract: one chain's entries (without it and without accountId, every served chain's, merged by time).
        chainId: Schema.optionalKey(ChainId)
      },
      success: ActivityPage,
      error: [BadRequestError, NotFoundError]
    }),
    // Declared before `/activity/:eventId` so the literal word `anchor` is never an event id.
    HttpApiEndpoint.get("anchor", "/activity/anchor", { success: AnchorStatus }),
    // Declared before `/activity/:eventId` too: the more specific path first.
    HttpApiEndpoint.get("proof", "/activity/:eventId/proof", {
      params: { eventId: Id },
      success: AuditProof,
      // 409 `conflict`: the entry exists but no anchor covers it yet (docs/decisions.md).
      error: [NotFoundError, ConflictError]
    }),
    HttpApiEndpoint.get("get", "/activity/:eventId", {
      params: { eventId: Id },
      success: AuditEvent,
      error: [NotFoundError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Activity", description: "The hash-chained audit log." }))
{}
