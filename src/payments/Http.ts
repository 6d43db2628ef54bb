/**
 * The payments endpoints: thin handlers over `Payments`, with the feature's services and its
 * chain follower hook (Settlements.ts) provided here, so the group needs only infrastructure.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { PaymentsApi } from "./Api.ts"
import { Payments } from "./Payments.ts"
import { SettlementsLive } from "./Settlements.ts"

export const PaymentsHandlers = HttpApiBuilder.group(
  contractOf(PaymentsApi),
  "payments",
  Effect.fn(function*(handlers) {
    const payments = yield* Payments
    return handlers
      .handle("authorize", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => payments.authorize(s, payload)))
      .handle("list", ({ query }) => Effect.flatMap(CurrentSigner, (s) => payments.list(s, query)))
      .handle("get", ({ params }) => Effect.flatMap(CurrentSigner, (s) => payments.get(s, params.paymentId)))
  })
).pipe(Layer.provide(Payments.layer), Layer.merge(SettlementsLive))
