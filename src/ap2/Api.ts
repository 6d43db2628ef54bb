import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  BadRequestError,
  NotFoundError,
  OutOfScopeError,
  ServiceUnavailableError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { PaymentMandateBuild, PaymentMandateBuildRequest } from "./Domain.ts"

export class Ap2Api extends HttpApiGroup.make("ap2")
  .add(
    HttpApiEndpoint.post("buildPaymentMandate", "/ap2/payment-mandates/build", {
      payload: PaymentMandateBuildRequest,
      success: PaymentMandateBuild,
      error: [BadRequestError, NotFoundError, OutOfScopeError, UpstreamUnavailableError, UpstreamTimeoutError, ServiceUnavailableError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({
    title: "AP2",
    description: "Google's Agent Payments Protocol: an open Payment Mandate becomes a grant the chain holds."
  }))
{}
