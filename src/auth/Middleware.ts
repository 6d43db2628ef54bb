/**
 * The bearer-session middleware contract: shared by every protected group and by
 * the typed client. Its implementation lives in `auth/MiddlewareLive.ts`.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { UnauthorizedError } from "../api/Errors.ts"
import type { Address } from "../domain/Primitives.ts"

/** The signer that the current session identifies. */
export interface Signer {
  readonly address: Address
  readonly sessionId: string
  readonly sessionExpiresAt: Date
}

export class CurrentSigner extends Context.Service<CurrentSigner, Signer>()("das/auth/CurrentSigner") {}

export class Authorization extends HttpApiMiddleware.Service<Authorization, { provides: CurrentSigner; requires: never }>()(
  "das/auth/Authorization",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: UnauthorizedError
  }
) {}

/**
 * The session token of a request whose endpoint checks the session in its own statement
 * (`POST /userops`: the session check is folded into the relay's first lookup, one
 * PostgreSQL round trip fewer; docs/decisions.md "Issue 30: the relay's session check").
 * Only the token's hash: nothing is known about the signer until that statement ran.
 */
export class BearerSession extends Context.Service<BearerSession, { readonly tokenHash: Uint8Array }>()("das/auth/BearerSession") {}

/**
 * The same bearer scheme as `Authorization`, for an endpoint that authenticates in its own
 * statement: a token that cannot be a session token is refused here (401), any other is
 * checked by the endpoint before it reads or writes anything on the signer's behalf.
 */
export class InlineAuthorization extends HttpApiMiddleware.Service<InlineAuthorization, { provides: BearerSession; requires: never }>()(
  "das/auth/InlineAuthorization",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: UnauthorizedError
  }
) {}
