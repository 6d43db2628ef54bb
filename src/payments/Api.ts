import { Schema } from "effect"
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
import { Id } from "../domain/Primitives.ts"
import { X402Payment, X402PaymentAuthorization, X402PaymentRequest, X402PaymentStatus } from "./Domain.ts"

const common = [BadRequestError, NotFoundError, UpstreamUnavailableError, UpstreamTimeoutError, ServiceUnavailableError] as const

export class PaymentsApi extends HttpApiGroup.make("payments")
  .add(
    HttpApiEndpoint.post("authorize", "/payments/x402", {
      payload: X402PaymentRequest,
      success: X402PaymentAuthorization,
      error: [...common, OutOfScopeError]
    }).annotateMerge(OpenApi.annotations({
      summary: "What to sign to pay an x402 402 under a grant",
      description:
        "The agent holding a grant (its own session: the grant's delegate key, or the signer of the delegate smart account) " +
        "sends the offer it chose from a resource server's `PAYMENT-REQUIRED` (verbatim) and the resource. The service reads " +
        "them as hostile input (400 naming the field; a network it does not serve: 400 listing the chains served), then checks " +
        "the payment against the grant like any action: 422 `out_of_scope` with `declineReason` (`token_not_allowed`, " +
        "`recipient_not_allowed` for a `payTo` off the allowlist, `per_action_exceeded`, `cap_exceeded`, `period_exceeded`, " +
        "`stream_exceeded`, `count_exhausted`, `expired`, `revoked`, `account_frozen`, or `redeemer_not_allowed` when the " +
        "grant's redeemer rule does not name `extra.facilitatorAddress`), recorded on the owner's log with a notification. " +
        "Allowed, it reserves the amount (`upto`: the ceiling) against the grant's budget until the payment's deadline " +
        "(now + `maxTimeoutSeconds`, at most the grant's expiry) and answers the payment delegation to sign (from the grant's " +
        "delegate to the facilitator, under the grant: exactly this transfer, once, before the deadline), its EIP-712 typed " +
        "data, the grant with its caveat args, the DelegationManager and the paying account. Nothing is sent on chain: the " +
        "facilitator settles the signed payment with `redeemDelegations`, and the chain follower records it (the reservation " +
        "becomes final with what moved). A smart-account delegate must be deployed (its ERC-1271 vouches for the signature)."
    })),
    HttpApiEndpoint.get("list", "/payments/x402", {
      query: {
        delegationId: Schema.optionalKey(Id),
        status: Schema.optionalKey(X402PaymentStatus)
      },
      success: Schema.Array(X402Payment),
      error: common
    }).annotateMerge(OpenApi.annotations({
      summary: "x402 payments under the signer's grants",
      description:
        "Payments under one grant (`delegationId`: the owner's or the holder's lane; another's grant is 404) or under every " +
        "grant the signer owns or holds, newest first (at most 200): what was authorized (resource, offer, deadline, " +
        "reservation) and what settled (the amount that moved, the transaction, the owner's audit entry). Payments redeemed " +
        "under a grant of ours but signed around the service are listed too, without a resource. Reads only; changes nothing."
    })),
    HttpApiEndpoint.get("get", "/payments/x402/:paymentId", {
      params: { paymentId: Id },
      success: X402Payment,
      error: common
    }).annotateMerge(OpenApi.annotations({
      summary: "One x402 payment",
      description: "One payment under a grant the signer owns or holds (404 otherwise). Reads only; changes nothing."
    }))
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({
    title: "Payments",
    description: "x402 payments (HTTP 402) paid from the owner's account under an agent's grant, with the ERC-7710 method."
  }))
{}
