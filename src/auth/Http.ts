import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { CurrentSigner } from "./Middleware.ts"
import { Sessions } from "./Sessions.ts"

export const AuthHandlers = HttpApiBuilder.group(
  Api,
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
  Api,
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
