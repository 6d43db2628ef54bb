import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { CurrentSigner } from "./Middleware.ts"
import { Sessions } from "./Sessions.ts"
import { AuthApi, SessionApi } from "./Api.ts"

export const AuthHandlers = HttpApiBuilder.group(
  contractOf(AuthApi),
  "auth",
  Effect.fn(function*(handlers) {
    const sessions = yield* Sessions
    return handlers
      .handle("nonce", () =>
        Effect.map(sessions.issueNonce, (n) => ({
          ...n,
          issuedAt: n.issuedAt.toISOString(),
          expiresAt: n.expiresAt.toISOString()
        })))
      .handle("signIn", ({ payload }) =>
        Effect.map(sessions.signIn(payload.message, payload.signature), (s) => ({
          ...s,
          expiresAt: s.expiresAt.toISOString()
        })))
  })
)

export const SessionHandlers = HttpApiBuilder.group(
  contractOf(SessionApi),
  "session",
  Effect.fn(function*(handlers) {
    const sessions = yield* Sessions
    return handlers
      .handle("current", () =>
        Effect.map(CurrentSigner, (signer) => ({
          signerAddress: signer.address,
          expiresAt: signer.sessionExpiresAt.toISOString()
        })))
      .handle("signOut", () => Effect.flatMap(CurrentSigner, (signer) => sessions.revoke(signer.sessionId)))
  })
)
