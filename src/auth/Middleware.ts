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
