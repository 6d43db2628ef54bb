import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { BearerSession, CurrentSigner } from "../auth/Middleware.ts"
import { currentPeerKey } from "../platform/ClientAddress.ts"
import { RelayLive, RelayWithReconcilerLive } from "./Live.ts"
import { Relay } from "./Relay.ts"
import { UserOpsApi } from "./Api.ts"
import { ReceiptWaiters } from "./Waiters.ts"

/** `POST /userops` and `GET /userops/{userOpId}` (docs/relay.md); the reconciler runs with them. */
export const UserOpsHandlers = HttpApiBuilder.group(
  contractOf(UserOpsApi),
  "userops",
  Effect.fn(function*(handlers) {
    const relay = yield* Relay
    const waiters = yield* ReceiptWaiters
    return handlers
      .handle("submit", ({ payload }) =>
        // The session is checked by the relay's first statement (InlineAuthorization: no query of its own).
        Effect.flatMap(BearerSession, (s) => relay.submitWithSession(s, payload)).pipe(
          // Watched on its chain from now on: settled (and its waiters woken) as soon as it is included.
          Effect.tap(waiters.watch)
        ))
      .handle("get", ({ params, query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const waitMs = yield* waiters.parseWait(query.wait)
          return yield* waiters.get(signer.address, params.userOpId, waitMs, yield* currentPeerKey)
        }))
  })
).pipe(
  Layer.provide(ReceiptWaiters.layer.pipe(Layer.provide(RelayLive))),
  Layer.provide(RelayWithReconcilerLive)
)
