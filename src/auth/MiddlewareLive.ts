import { Effect, Layer, Redacted } from "effect"
import { Authorization, CurrentSigner } from "./Middleware.ts"
import { Sessions } from "./Sessions.ts"

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
