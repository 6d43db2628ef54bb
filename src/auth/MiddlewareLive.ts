import { Effect, Layer, Redacted } from "effect"
import { Unauthorized } from "../api/Errors.ts"
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
 * The bearer middleware of an endpoint that checks the session in its own statement: no
 * query here. A token that cannot be one `Sessions` issued is a 401 at once (as
 * `Authorization` answers it); any other reaches the endpoint as its hash.
 */
export const InlineAuthorizationLive = Layer.succeed(
  InlineAuthorization,
  InlineAuthorization.of({
    bearer: (httpEffect, { credential }) => {
      const token = Redacted.value(credential)
      return SESSION_TOKEN.test(token)
        ? Effect.provideService(httpEffect, BearerSession, { tokenHash: hashToken(token) })
        : Effect.fail(new Unauthorized({ message: "Missing, unknown, expired or revoked session token" }))
    }
  })
)
