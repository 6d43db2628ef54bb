/**
 * The AP2 endpoint: a thin handler over `PaymentMandates`. Delegations (the grant build) and the
 * relay are the same shared layers the delegations group uses.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { AuditChain } from "../audit/AuditChain.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { DelegationsLive } from "../delegations/Http.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { Ap2Api } from "./Api.ts"
import { PaymentMandates } from "./PaymentMandates.ts"

export const PaymentMandatesLive = PaymentMandates.layer.pipe(
  Layer.provide(Layer.mergeAll(DelegationsLive, TokenRegistry.layer, AuditChain.layer))
)

export const Ap2Handlers = HttpApiBuilder.group(
  contractOf(Ap2Api),
  "ap2",
  Effect.fn(function*(handlers) {
    const mandates = yield* PaymentMandates
    return handlers.handle("buildPaymentMandate", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => mandates.build(s, payload)))
  })
).pipe(Layer.provide(PaymentMandatesLive))
