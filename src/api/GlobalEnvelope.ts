/**
 * Router-wide middleware for what happens outside any endpoint: the `/v1` prefix
 * (the contract is served with and without it), unknown routes (404) and
 * defects (500, logged with their cause, never shown to the client). Every one
 * answers with the contract's envelope and the request's trace id.
 */
import { Cause, Effect, type Types } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpServerError } from "effect/http"
import { currentRequestId, isApiError, withRequestId } from "./Envelope.ts"
import type { ApiError } from "./Errors.ts"
import { BadRequest, InternalError, NotFound, statusOf, toEnvelope } from "./Errors.ts"

const V1 = "/v1"

export const stripVersionPrefix = (url: string): string =>
  url === V1 ? "/" : url.startsWith(`${V1}/`) || url.startsWith(`${V1}?`) ? url.slice(V1.length) || "/" : url

export const envelopeResponse = (e: ApiError) => HttpServerResponse.jsonUnsafe(toEnvelope(e), { status: statusOf(e) })

const render = (cause: Cause.Cause<unknown>) =>
  Effect.gen(function*() {
    const requestId = yield* currentRequestId
    const rid = requestId === undefined ? {} : { requestId }
    const failure = cause.reasons.find(Cause.isFailReason)?.error
    if (failure instanceof HttpServerError.HttpServerError) {
      if (failure.reason._tag === "RouteNotFound") {
        return envelopeResponse(new NotFound({ message: "No such endpoint", ...rid }))
      }
      if (failure.reason._tag === "RequestParseError") {
        return envelopeResponse(new BadRequest({ message: "The request could not be read", ...rid }))
      }
    }
    if (isApiError(failure)) return envelopeResponse(withRequestId(failure, requestId))
    yield* Effect.logError("unhandled failure", cause)
    return envelopeResponse(new InternalError({ message: "Internal error", ...rid }))
  })

export const GlobalEnvelope = HttpRouter.middleware(
  (httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const url = stripVersionPrefix(request.url)
      const effect = url === request.url
        ? httpEffect
        : Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, request.modify({ url }))
      return yield* effect.pipe(
        Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : render(cause)))
      )
    }) as Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest>,
  { global: true }
)
