/**
 * x402 payments through the service, composed: authorizing a payment under a grant
 * (Authorize.ts) and reading the record of payments; their settlement is the chain follower's
 * hook (Settlements.ts). Rules: docs/payments.md ("Through the service"). SQL: PaymentRepo.ts.
 */
import { Context, Effect, Layer } from "effect"
import type { BadRequest, NotFound, OutOfScope, ServiceUnavailable, UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import { NotFound as NotFoundError } from "../api/Errors.ts"
import { AuditLive } from "../audit/Recorder.ts"
import type { Signer } from "../auth/Middleware.ts"
import { DelegationRepo } from "../delegations/DelegationRepo.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { makeAuthorize } from "./Authorize.ts"
import type { X402Payment, X402PaymentAuthorization, X402PaymentRequest } from "./Domain.ts"
import { type ListedStatus, PaymentRepo } from "./PaymentRepo.ts"
import { toPayment } from "./Records.ts"

export class Payments extends Context.Service<Payments, {
  authorize(
    signer: Signer,
    input: X402PaymentRequest
  ): Effect.Effect<X402PaymentAuthorization, BadRequest | NotFound | OutOfScope | ServiceUnavailable | UpstreamUnavailable | UpstreamTimeout>
  list(signer: Signer, query: { readonly delegationId?: string; readonly status?: ListedStatus }): Effect.Effect<ReadonlyArray<X402Payment>, NotFound>
  get(signer: Signer, id: string): Effect.Effect<X402Payment, NotFound>
}>()("das/payments/Payments") {
  static readonly layer = Layer.effect(Payments, Effect.suspend(() => make)).pipe(
    Layer.provide(Layer.mergeAll(PaymentRepo.layer, DelegationRepo.layer, TokenRegistry.layer, AuditLive))
  )
}

const make = Effect.gen(function*() {
  const { authorize } = yield* makeAuthorize
  const repo = yield* PaymentRepo
  const grants = yield* DelegationRepo
  const tokens = yield* TokenRegistry
  const lower = (s: string) => s.toLowerCase()

  const list = Effect.fn("Payments.list")(function*(signer: Signer, query: { readonly delegationId?: string; readonly status?: ListedStatus }) {
    const me = lower(signer.address)
    if (query.delegationId !== undefined) {
      // The owner's lane or the holder's; anyone else's grant does not exist.
      const row = (yield* grants.findOwned(query.delegationId, me)) ?? (yield* grants.findHeld(query.delegationId, me))
      if (row === undefined || row.status === "pending" || row.status === "failed") {
        return yield* new NotFoundError({ message: `No delegation ${query.delegationId}` })
      }
    }
    const rows = query.delegationId === undefined
      ? yield* repo.listForSigner(me, query.status)
      : yield* repo.listByDelegation(query.delegationId, query.status)
    const now = new Date()
    return rows.map((r) => toPayment(r, tokens, now))
  })

  const get = Effect.fn("Payments.get")(function*(signer: Signer, id: string) {
    const row = (yield* repo.visibleTo(id, lower(signer.address))) ? yield* repo.findById(id) : undefined
    if (row === undefined) return yield* new NotFoundError({ message: `No payment ${id}` })
    return toPayment(row, tokens, new Date())
  })

  return Payments.of({ authorize, list, get })
})
