import { Cause, Effect, Layer, Redacted } from "effect"
import { HttpApiError } from "effect/http-api"
import { BadRequest, Unauthorized } from "../api/Errors.ts"
import { Authorization, BearerSession, CurrentSigner, InlineAuthorization } from "./Middleware.ts"
import { hashToken, SESSION_TOKEN, Sessions } from "./Sessions.ts"

/** The bearer middleware: a valid session provides its signer to the endpoint. */
export const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function*() {
    const sessions = yield* Sessions
    return Authorization.of({
      bearer: (httpEffect, { credential }) =>
        Effect.flatMap(sessions.authenticate(Redacted.value(credential)), (session) =>
          Effect.provideService(httpEffect, CurrentSigner, session))
    })
  })
)

/**
 * A security middleware sees the endpoint's failures wrapped (HttpApiBuilder's `HandlerError`, not
 * exported): its `error` is the endpoint's. Pinned by test/userops/guarantees.test.ts.
 */
const HANDLER_ERROR = "~effect/http-api/HttpApiBuilder/HandlerError"
const unwrap = (value: unknown): unknown =>
  typeof value === "object" && value !== null && HANDLER_ERROR in value && "error" in value ? value.error : value

/** A request the contract or the endpoint refused as malformed (400), before its own statement ran. */
const malformed = (raw: unknown) => {
  const value = unwrap(raw)
  return (HttpApiError.HttpApiSchemaError.is(value) && value.kind !== "Body" && value.kind !== "ResponseHeaders") ||
    value instanceof BadRequest
}

/**
 * The bearer middleware of an endpoint that checks the session in its own statement: no
 * query here. A token that cannot be one `Sessions` issued is a 401 at once (as
 * `Authorization` answers it); any other reaches the endpoint as its hash. A request answered
 * 400 (a malformed payload, an unserved chain: refused before the endpoint's statement) is
 * answered so only to a live session; otherwise it is the 401 the middleware would have given
 * (the contract: a missing or expired token is a 401). That check costs a query on 400s only.
 */
export const InlineAuthorizationLive = Layer.effect(
  InlineAuthorization,
  Effect.map(Sessions, (sessions) =>
    InlineAuthorization.of({
      bearer: (httpEffect, { credential }) => {
        const token = Redacted.value(credential)
        if (!SESSION_TOKEN.test(token)) return Effect.fail(new Unauthorized({ message: "Missing, unknown, expired or revoked session token" }))
        const live = sessions.authenticate(token)
        return Effect.provideService(httpEffect, BearerSession, { tokenHash: hashToken(token) }).pipe(
          Effect.flatMap((response) => response.status === 400 ? Effect.as(live, response) : Effect.succeed(response)),
          Effect.catchCause((cause) =>
            cause.reasons.some((r) => (Cause.isFailReason(r) && malformed(r.error)) || (Cause.isDieReason(r) && malformed(r.defect)))
              ? Effect.andThen(live, Effect.failCause(cause))
              : Effect.failCause(cause)
          )
        )
      }
    }))
)
