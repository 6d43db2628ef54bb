import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  BadRequestError,
  NotFoundError,
  OutOfScopeError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { SignedUserOp, UserOpReceipt } from "../domain/Operations.ts"
import { Id } from "../domain/Primitives.ts"

export class UserOpsApi extends HttpApiGroup.make("userops")
  .add(
    HttpApiEndpoint.post("submit", "/userops", {
      payload: SignedUserOp,
      success: UserOpReceipt.pipe(HttpApiSchema.status(202)),
      error: [BadRequestError, NotFoundError, OutOfScopeError, UpstreamUnavailableError, UpstreamTimeoutError]
    }),
    HttpApiEndpoint.get("get", "/userops/:userOpId", {
      params: { userOpId: Id },
      success: UserOpReceipt,
      error: [NotFoundError, UpstreamUnavailableError, UpstreamTimeoutError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "User operations", description: "The relay." }))
{}
