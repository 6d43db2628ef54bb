/**
 * Sign-In with Ethereum (EIP-4361). `POST /auth/nonce` issues a single-use nonce,
 * `POST /auth/session` exchanges a signed message for a session bearer,
 * `DELETE /auth/session` revokes the current session (log-out).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequestError, UnauthorizedError } from "../api/Errors.ts"
import { Address, HexString, Timestamp, TextOfLength } from "../domain/Primitives.ts"
import { Account } from "../accounts/Domain.ts"
import { Authorization } from "./Middleware.ts"

export const NonceResponse = Schema.Struct({
  nonce: Schema.String,
  domain: Schema.String,
  uri: Schema.String,
  chainId: Schema.Int,
  issuedAt: Timestamp,
  expiresAt: Timestamp
}).annotate({ identifier: "SignInNonce" })

export const SessionRequest = Schema.Struct({
  message: TextOfLength(1, 4096),
  signature: HexString
}).annotate({ identifier: "SessionRequest" })

export const SessionResponse = Schema.Struct({
  token: Schema.String,
  signerAddress: Address,
  expiresAt: Timestamp,
  accounts: Schema.Array(Account)
}).annotate({ identifier: "Session" })

export const SessionInfo = Schema.Struct({
  signerAddress: Address,
  expiresAt: Timestamp
}).annotate({ identifier: "SessionInfo" })

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("nonce", "/auth/nonce", { success: NonceResponse }),
    HttpApiEndpoint.post("signIn", "/auth/session", {
      payload: SessionRequest,
      success: SessionResponse,
      error: [BadRequestError, UnauthorizedError]
    })
  )
  .annotateMerge(OpenApi.annotations({ title: "Auth", description: "Sign-In with Ethereum sessions." }))
{}

export class SessionApi extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.get("current", "/auth/session", { success: SessionInfo }),
    HttpApiEndpoint.delete("signOut", "/auth/session", { success: HttpApiSchema.NoContent })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Session", description: "The current session; log-out." }))
{}
