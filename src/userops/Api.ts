import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import {
  BadRequestError,
  NotFoundError,
  OutOfScopeError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization, InlineAuthorization } from "../auth/Middleware.ts"
import { SignedUserOp, UserOpReceipt } from "../domain/Operations.ts"
import { Id } from "../domain/Primitives.ts"

export class UserOpsApi extends HttpApiGroup.make("userops")
  .add(
    HttpApiEndpoint.get("get", "/userops/:userOpId", {
      params: { userOpId: Id },
      // A bounded long-poll (docs/relay.md): answer once the operation settled, or after this long.
      query: { wait: Schema.optional(Schema.String) },
      success: UserOpReceipt,
      error: [BadRequestError, NotFoundError, TooManyRequestsError, ServiceUnavailableError, UpstreamUnavailableError, UpstreamTimeoutError]
    })
  )
  .middleware(Authorization)
  // Added after the group's middleware, so it has only its own: the session is checked in the
  // relay's first statement, with the lookups (one round trip fewer; docs/decisions.md).
  .add(
    HttpApiEndpoint.post("submit", "/userops", {
      payload: SignedUserOp,
      success: UserOpReceipt.pipe(HttpApiSchema.status(202)),
      error: [BadRequestError, NotFoundError, OutOfScopeError, UpstreamUnavailableError, UpstreamTimeoutError]
    }).middleware(InlineAuthorization)
  )
  .annotateMerge(OpenApi.annotations({ title: "User operations", description: "The relay." }))
{}
