/**
 * The envelope middleware: an API-wide `HttpApiMiddleware` that renders the
 * framework's own request-decode failures as the contract's envelope (400, with
 * the failing paths in `details.issues`) and stamps every typed error with the
 * request's trace id as `requestId`. It declares both errors, so the OpenAPI
 * document and the typed client know them on every endpoint.
 */
import { Cause, Effect, Layer, Option, SchemaIssue, Tracer } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiError, HttpApiMiddleware } from "effect/http-api"
import { isSqlError } from "effect/sql/SqlError"
import { randomUUID } from "node:crypto"
import type { ApiError } from "./Errors.ts"
import {
  BadRequest,
  BadRequestError,
  errorClasses,
  InternalError,
  InternalErrorError,
  PayloadTooLargeError,
  retryAfterOf,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnsupportedMediaTypeError
} from "./Errors.ts"

export class ErrorEnvelope extends HttpApiMiddleware.Service<ErrorEnvelope>()("das/api/ErrorEnvelope", {
  // What any endpoint may answer from the edge: a database outage (503), a rate limit or
  // quota (429), a body too large (413) or not JSON (415).
  error: [
    BadRequestError,
    InternalErrorError,
    ServiceUnavailableError,
    TooManyRequestsError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError
  ]
}) {}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const slotName = (kind: string) =>
  kind === "Params" ? "path" : kind === "Payload" ? "body" : kind.toLowerCase()

const issuesOf = (error: HttpApiError.HttpApiSchemaError) => {
  const slot = slotName(error.kind)
  return formatIssues(error.cause.issue).issues.map((issue) => ({
    path: [slot, ...(issue.path ?? []).map((p) => String(typeof p === "object" && p !== null ? p.key : p))].join("."),
    message: issue.message
  }))
}

/** Ids of requests nothing traces, made when first asked for, kept with the request's source (node's message). */
const untracedIds = new WeakMap<object, string>()

const untracedRequestId: Effect.Effect<string | undefined> = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) => {
    const source = Option.isSome(request) ? request.value.source : undefined
    if (typeof source !== "object" || source === null) return undefined
    let id = untracedIds.get(source)
    if (id === undefined) {
      // node:crypto's, not the global (webcrypto) one: the same UUID, ≈ 2 µs less per request.
      id = randomUUID().replaceAll("-", "")
      untracedIds.set(source, id)
    }
    return id
  }
)

/**
 * The request's id for the envelope and the access log: its trace id when spans are exported
 * (the request's server span and every span under it share it), otherwise an id of its own.
 * With no exporter Effect serves a request without a server span (its native tracer's spans
 * are seen by nobody), so the spans a service opens are each their own trace (docs/decisions.md).
 */
export const currentRequestId: Effect.Effect<string | undefined> = Effect.flatMap(Tracer.Tracer, (tracer) =>
  tracer === Tracer.nativeTracer
    ? untracedRequestId
    // Not `Effect.currentParentSpan`: without a span it fails with an error whose stack trace
    // is captured (docs/performance.md).
    : Effect.flatMap(
      Effect.serviceOption(Tracer.ParentSpan),
      (span) => (Option.isSome(span) ? Effect.succeed(span.value.traceId) : untracedRequestId)
    ))

/**
 * The headers that name a request on its answer: `x-request-id` (the `requestId` above), and
 * `traceparent` (W3C Trace Context: the request's server span) when spans are exported.
 */
export const responseIdHeaders: Effect.Effect<Record<string, string>> = Effect.flatMap(Tracer.Tracer, (tracer) =>
  tracer === Tracer.nativeTracer
    ? Effect.map(untracedRequestId, idHeader)
    : Effect.flatMap(Effect.serviceOption(Tracer.ParentSpan), (span) =>
      Option.isNone(span)
        ? Effect.map(untracedRequestId, idHeader)
        : Effect.succeed({
          "x-request-id": span.value.traceId,
          traceparent: `00-${span.value.traceId}-${span.value.spanId}-${span.value.sampled ? "01" : "00"}`
        })))

function idHeader(id: string | undefined): Record<string, string> {
  return id === undefined ? {} : { "x-request-id": id }
}

export const isApiError = (u: unknown): u is ApiError =>
  typeof u === "object" && u !== null && "_tag" in u && (u._tag as string) in errorClasses && u instanceof Error

/** A copy of a typed error carrying `requestId`. */
export const withRequestId = <E extends ApiError>(e: E, requestId: string | undefined): E => {
  if (requestId === undefined || e.requestId !== undefined) return e
  const Ctor = e.constructor as new(props: object) => E
  // Error fields (message) are not enumerable: copy them by name.
  return new Ctor({
    message: e.message,
    ...(e.details === undefined ? {} : { details: e.details }),
    ...("declineReason" in e ? { declineReason: e.declineReason } : {}),
    requestId
  })
}

/** Sends `Retry-After` with a typed error that says when to come back (429 quotas, 503). */
export const retryAfterHeader = (e: ApiError) => {
  const retryAfter = retryAfterOf(e)
  return retryAfter === undefined
    ? Effect.void
    : HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(retryAfter)))
    )
}

export const ErrorEnvelopeLive = Layer.succeed(ErrorEnvelope, (httpEffect) =>
  Effect.catch(httpEffect, (e: unknown) =>
    Effect.flatMap(currentRequestId, (requestId) => {
      // An SQL error a handler let through as a failure: the edge classifies it (503 outage,
      // 400 unstorable, 500 bug) as it does the ones services turn into defects.
      if (isSqlError(e)) return Effect.die(e)
      if (HttpApiError.HttpApiSchemaError.is(e)) {
        if (e.kind === "Body" || e.kind === "ResponseHeaders") {
          // Our own response failed its Schema: a defect, reported, never leaked.
          return Effect.logError("response failed its schema", Cause.fail(e)).pipe(
            Effect.andThen(Effect.fail(new InternalError({ message: "Internal error", ...(requestId ? { requestId } : {}) })))
          )
        }
        const issues = issuesOf(e)
        return Effect.fail(
          new BadRequest({
            message: `Invalid request: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
            details: { issues },
            ...(requestId ? { requestId } : {})
          })
        )
      }
      if (!isApiError(e)) return Effect.fail(e)
      const stamped = withRequestId(e, requestId)
      return Effect.andThen(retryAfterHeader(stamped), Effect.fail(stamped))
    })
  ) as never)
