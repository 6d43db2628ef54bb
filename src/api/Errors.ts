/**
 * The contract's error envelope and the typed errors that cross HTTP.
 *
 * Every error class below is an ordinary `Schema.TaggedError` on the server side
 * (handlers `yield*` it). What goes on the wire is its `Envelope` codec:
 * `{ "error": { code, message, declineReason?, details?, requestId? } }` with the
 * HTTP status carried as the `httpApiStatus` annotation, so the OpenAPI document
 * and the typed client know every error response of every endpoint.
 */
import { Schema, SchemaTransformation } from "effect"

/** What every error body carries, per the contract. */
export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  declineReason: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.JsonObject),
  requestId: Schema.optionalKey(Schema.String)
})
export type ErrorBody = typeof ErrorBody.Type

export const ErrorEnvelope = Schema.Struct({ error: ErrorBody }).annotate({
  identifier: "ErrorEnvelope",
  description: "The error envelope that every error response carries."
})
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** Fields shared by every typed error: what the envelope carries besides `code`. */
const fields = {
  message: Schema.String,
  details: Schema.optionalKey(Schema.JsonObject),
  requestId: Schema.optionalKey(Schema.String)
}

const envelopeOf = <Tag extends string, Self extends { readonly _tag: Tag }>(
  errorClass: Schema.Codec<Self, { readonly _tag: Tag } & ErrorBodyFields> & { readonly identifier?: string },
  tag: Tag,
  code: string,
  status: number
) =>
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(code),
      message: Schema.String,
      declineReason: Schema.optionalKey(Schema.String),
      details: Schema.optionalKey(Schema.JsonObject),
      requestId: Schema.optionalKey(Schema.String)
    })
  }).pipe(
    Schema.decodeTo(
      errorClass,
      SchemaTransformation.transform({
        decode: ({ error }) => {
          const { code: _code, ...rest } = error
          return { _tag: tag, ...rest } as { readonly _tag: Tag } & ErrorBodyFields
        },
        encode: (e) => {
          const { _tag, ...rest } = e
          return { error: { code, ...rest } }
        }
      })
    ),
    Schema.annotate({ httpApiStatus: status, identifier: `${tag}Envelope`, description: `\`${code}\` (${status})` })
  )

interface ErrorBodyFields {
  readonly message: string
  readonly declineReason?: string
  readonly details?: Schema.JsonObject
  readonly requestId?: string
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {
  static readonly code = "unauthorized"
  static readonly status = 401
}
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {
  static readonly code = "bad_request"
  static readonly status = 400
}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  static readonly code = "not_found"
  static readonly status = 404
}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {
  static readonly code = "conflict"
  static readonly status = 409
}
/** A request or action outside a delegation's (or mandate's) limits. */
export class OutOfScope extends Schema.TaggedError<OutOfScope>()("OutOfScope", {
  ...fields,
  declineReason: Schema.String
}) {
  static readonly code = "out_of_scope"
  static readonly status = 422
}
export class NotImplemented extends Schema.TaggedError<NotImplemented>()("NotImplemented", fields) {
  static readonly code = "not_implemented"
  static readonly status = 501
}
/** An upstream (bundler, marketplace, launchpad, price source) failed or answered nonsense. */
export class UpstreamUnavailable extends Schema.TaggedError<UpstreamUnavailable>()("UpstreamUnavailable", fields) {
  static readonly code = "upstream_unavailable"
  static readonly status = 502
}
/** An upstream did not answer in time. */
export class UpstreamTimeout extends Schema.TaggedError<UpstreamTimeout>()("UpstreamTimeout", fields) {
  static readonly code = "upstream_timeout"
  static readonly status = 504
}
/** The service itself is not ready (database or chain still starting). */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {
  static readonly code = "service_unavailable"
  static readonly status = 503
}
/**
 * A quota or rate limit was reached (sign-in, builds, sponsorship). `details.retryAfterSeconds`
 * says when to try again; the envelope renderer also sends it as the `Retry-After` header.
 */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", fields) {
  static readonly code = "rate_limited"
  static readonly status = 429
}
/** The request body is larger than the service accepts (`HTTP_MAX_BODY`). */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {
  static readonly code = "payload_too_large"
  static readonly status = 413
}
/** The request body is not JSON (`Content-Type` other than `application/json`). */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", fields) {
  static readonly code = "unsupported_media_type"
  static readonly status = 415
}
/** The path exists, but not with this method (`details.allow` lists the methods it has). */
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", fields) {
  static readonly code = "method_not_allowed"
  static readonly status = 405
}
/** The URL is longer than the service accepts (`HTTP_MAX_URL_LENGTH`). */
export class UriTooLong extends Schema.TaggedError<UriTooLong>()("UriTooLong", fields) {
  static readonly code = "uri_too_long"
  static readonly status = 414
}
/** The request's headers are larger than the service accepts (`HTTP_MAX_HEADER_SIZE`). */
export class HeadersTooLarge extends Schema.TaggedError<HeadersTooLarge>()("HeadersTooLarge", fields) {
  static readonly code = "headers_too_large"
  static readonly status = 431
}
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields) {
  static readonly code = "internal_error"
  static readonly status = 500
}

/** The wire codecs, one per error: use these in endpoint and middleware `error` lists. */
export const UnauthorizedError = envelopeOf(Unauthorized, "Unauthorized", Unauthorized.code, Unauthorized.status)
export const BadRequestError = envelopeOf(BadRequest, "BadRequest", BadRequest.code, BadRequest.status)
export const NotFoundError = envelopeOf(NotFound, "NotFound", NotFound.code, NotFound.status)
export const ConflictError = envelopeOf(Conflict, "Conflict", Conflict.code, Conflict.status)
export const OutOfScopeError = envelopeOf(
  OutOfScope as unknown as Schema.Codec<OutOfScope, { readonly _tag: "OutOfScope" } & ErrorBodyFields>,
  "OutOfScope",
  OutOfScope.code,
  OutOfScope.status
)
export const NotImplementedError = envelopeOf(NotImplemented, "NotImplemented", NotImplemented.code, NotImplemented.status)
export const UpstreamUnavailableError = envelopeOf(
  UpstreamUnavailable,
  "UpstreamUnavailable",
  UpstreamUnavailable.code,
  UpstreamUnavailable.status
)
export const UpstreamTimeoutError = envelopeOf(UpstreamTimeout, "UpstreamTimeout", UpstreamTimeout.code, UpstreamTimeout.status)
export const ServiceUnavailableError = envelopeOf(
  ServiceUnavailable,
  "ServiceUnavailable",
  ServiceUnavailable.code,
  ServiceUnavailable.status
)
export const TooManyRequestsError = envelopeOf(
  TooManyRequests,
  "TooManyRequests",
  TooManyRequests.code,
  TooManyRequests.status
)
export const InternalErrorError = envelopeOf(InternalError, "InternalError", InternalError.code, InternalError.status)
export const PayloadTooLargeError = envelopeOf(
  PayloadTooLarge,
  "PayloadTooLarge",
  PayloadTooLarge.code,
  PayloadTooLarge.status
)
export const UnsupportedMediaTypeError = envelopeOf(
  UnsupportedMediaType,
  "UnsupportedMediaType",
  UnsupportedMediaType.code,
  UnsupportedMediaType.status
)

export type ApiError =
  | Unauthorized
  | BadRequest
  | NotFound
  | Conflict
  | OutOfScope
  | NotImplemented
  | UpstreamUnavailable
  | UpstreamTimeout
  | ServiceUnavailable
  | TooManyRequests
  | InternalError
  | PayloadTooLarge
  | UnsupportedMediaType
  | MethodNotAllowed
  | UriTooLong
  | HeadersTooLarge

/** Every typed error class, keyed by tag: used by the envelope renderer and its tests. */
export const errorClasses = {
  Unauthorized,
  BadRequest,
  NotFound,
  Conflict,
  OutOfScope,
  NotImplemented,
  UpstreamUnavailable,
  UpstreamTimeout,
  ServiceUnavailable,
  TooManyRequests,
  InternalError,
  PayloadTooLarge,
  UnsupportedMediaType,
  MethodNotAllowed,
  UriTooLong,
  HeadersTooLarge
} as const

/** Renders any typed error as the plain envelope object (for paths outside HttpApi). */
export const toEnvelope = (e: ApiError): ErrorEnvelope => ({
  error: {
    code: errorClasses[e._tag].code,
    // Error fields (message) are not enumerable: read them by name.
    message: e.message,
    ...("declineReason" in e && e.declineReason !== undefined ? { declineReason: e.declineReason } : {}),
    ...(e.details === undefined ? {} : { details: e.details }),
    ...(e.requestId === undefined ? {} : { requestId: e.requestId })
  }
})

export const statusOf = (e: ApiError): number => errorClasses[e._tag].status

/**
 * `Retry-After` (seconds) for an error that carries `details.retryAfterSeconds` (429 rate
 * limits and quotas, 503 outages): every renderer sends it as the header too.
 */
export const retryAfterOf = (e: ApiError): number | undefined => {
  const value = e.details?.retryAfterSeconds
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.ceil(value) : undefined
}
