import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { RelayWithReconcilerLive } from "./Live.ts"
import { Relay } from "./Relay.ts"
import { UserOpsApi } from "./Api.ts"

/** `POST /userops` and `GET /userops/{userOpId}` (docs/relay.md); the reconciler runs with them. */
export const UserOpsHandlers = HttpApiBuilder.group(
  contractOf(UserOpsApi),
  "userops",
  Effect.fn(function*(handlers) {
    const relay = yield* Relay
    return handlers
      .handle("submit", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => relay.submit(s.address, payload)))
      .handle("get", ({ params }) => Effect.flatMap(CurrentSigner, (s) => relay.get(s.address, params.userOpId)))
  })
).pipe(Layer.provide(RelayWithReconcilerLive))
