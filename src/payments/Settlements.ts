/**
 * An x402 payment settled, recorded as the chain showed it: a redemption hook of the chain
 * follower (src/follower/RedemptionHooks.ts), inside its pass's transaction. A redemption of a
 * known grant whose chain is [payment delegation, grant] and whose leaf reads as a payment
 * (PaymentDelegation.ts `readPaymentTerms`: pinned transfer or ceiling, single use, a deadline)
 * is an x402 payment:
 *
 * - its reservation becomes `final` with the units that moved (`upto`: what the server settled,
 *   not the ceiling signed), or is released when nothing moved; a payment signed around the
 *   service gets a `final` reservation of what moved, so the service's ledger counts it too;
 * - the owner's log gets an `x402_payment` entry (actor: the facilitator, amount, token,
 *   recipient `payTo`, the transaction) and its notification, and the budget alerts run as for
 *   any action; a managed smart-account agent's log gets the same entry;
 * - the payment's record (resource URL, offer, reservation) is settled with the transaction and
 *   the owner's entry.
 *
 * When the settlement's block leaves the chain (a reorg), the follower compensates the owner's
 * entry and this hook undoes the rest (the agent's copy of the entry gets its `reorged` entry too): the payment is `authorized` again, its reservation held
 * again (the amount signed, until the deadline), because the same payment may still be included
 * before its deadline; if it is, it settles anew exactly as the first time (one live settlement,
 * one debit).
 *
 * Lock order as the relay's settlements: the reservation's row before the owner's log head.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Effect, Layer } from "effect"
import type { Address } from "viem"
import { AuditLive, AuditRecorder } from "../audit/Recorder.ts"
import { Chains } from "../chain/Chains.ts"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { DelegationRepo } from "../delegations/DelegationRepo.ts"
import { fromUnits } from "../delegations/Policy.ts"
import type { ObservedRedemption } from "../follower/Redeemed.ts"
import { RedemptionHooks, RedemptionHooksLive, type UnwoundRedemption } from "../follower/RedemptionHooks.ts"
import { makeBudgetAlerts } from "../notifications/BudgetAlerts.ts"
import { Notifications } from "../notifications/Notifications.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { X402_ACTION } from "./Authorize.ts"
import { PaymentRepo } from "./PaymentRepo.ts"
import { type PaymentScheme, readPaymentTerms } from "@das/x402-erc7710"

const lower = <S extends string>(s: S) => s.toLowerCase() as S

/** The scheme a leaf's caveats are shaped for: `exact` pins the execution, `upto` caps a transfer amount. */
const schemeOf = (environment: DelegationEnvironment, caveats: ReadonlyArray<{ readonly enforcer: string }>): PaymentScheme | undefined => {
  const has = (name: string) => {
    const address = environment.caveatEnforcers[name]
    return address !== undefined && caveats.some((c) => lower(c.enforcer) === lower(address))
  }
  return has("ExactExecutionEnforcer") ? "exact" : has("ERC20TransferAmountEnforcer") ? "upto" : undefined
}

export const SettlementsLive = Layer.effectDiscard(Effect.gen(function*() {
  const hooks = yield* RedemptionHooks
  const repo = yield* PaymentRepo
  const grants = yield* DelegationRepo
  const chains = yield* Chains
  const tokens = yield* TokenRegistry
  const recorder = yield* AuditRecorder
  const alerts = yield* makeBudgetAlerts

  const entry = (input: Parameters<typeof recorder.record>[0]) =>
    recorder.record(input).pipe(
      Effect.map((r): string => r.entry.id),
      // A block read again (or a pass run again) writes nothing twice.
      Effect.catchTag("AuditDuplicate", (e) => Effect.succeed(e.existingId))
    )

  const settle = (chainId: number, r: ObservedRedemption) =>
    Effect.gen(function*() {
      const net = chains.find(chainId)
      const leaf = r.chain[0]
      if (net === undefined || r.delegationId === undefined || r.chain.length !== 2 || leaf === undefined || r.leafCaveats === undefined) {
        return undefined
      }
      const environment = net.network.delegation
      const scheme = schemeOf(environment, r.leafCaveats)
      if (scheme === undefined) return undefined
      const read = readPaymentTerms(environment, { caveats: r.leafCaveats } as unknown as Delegation, scheme)
      if (!read.ok) return undefined
      const terms = read.terms
      // What the payment moved: the transfers out of the owner's account to `payTo` in `asset`.
      const units = r.moved
        .filter((m) => lower(m.token) === lower(terms.asset) && lower(m.to) === lower(terms.payTo))
        .reduce((sum, m) => sum + m.units, 0n)
      const settlement = { settledUnits: units, txHash: r.txHash, blockHash: r.blockHash, logIndex: r.logIndex }

      const known = yield* repo.lockByHash(chainId, lower(leaf.hash))
      if (known !== undefined && known.reservation_id !== null) {
        if (units > 0n) {
          yield* grants.finalizeReservationUnits(known.reservation_id, units, r.txHash)
          yield* alerts.afterSpend(known.reservation_id)
        } else {
          yield* grants.releaseReservationNow(known.reservation_id)
        }
      }
      let reservationId: string | undefined
      if (known === undefined && units > 0n) {
        // Signed around the service: the ledger counts what the chain shows (the usage reconciles with it anyway).
        reservationId = `rsv_${crypto.randomUUID()}`
        yield* grants.insertReservation({
          id: reservationId,
          delegationId: r.delegationId,
          token: lower(terms.asset),
          units,
          recipient: lower(terms.payTo),
          expiresAt: new Date(terms.validBefore * 1000)
        })
        yield* grants.finalizeReservationUnits(reservationId, units, r.txHash)
        yield* alerts.afterSpend(reservationId)
      }

      const token = tokens.byAddress(chainId, terms.asset)
      const facts = token === undefined
        ? { token: lower(terms.asset), recipient: lower(terms.payTo) }
        : { amount: fromUnits(units, token.decimals), token: token.symbol, recipient: lower(terms.payTo) }
      const common = {
        actor: r.redeemer,
        action: X402_ACTION,
        ...facts,
        chain: chains.nameOf(chainId),
        chainId,
        status: "executed" as const,
        provenance: "onchain_unrelayed" as const,
        txHash: r.txHash,
        delegationId: r.delegationId
      }
      const ownerKey = `x402:${r.blockHash}:${r.logIndex}`
      const ownerEntryId = yield* entry({ ...common, accountId: r.accountId, declineId: ownerKey })
      // A smart-account agent managed here sees the payment on its own log too.
      const delegate = yield* grants.accountByAddress(lower(r.delegate), chainId)
      const delegateKey = `x402-via:${r.blockHash}:${r.logIndex}`
      const delegateEntryId = delegate === undefined || delegate.id === r.accountId
        ? undefined
        : yield* entry({ ...common, accountId: delegate.id, declineId: delegateKey })

      const settled = { ...settlement, auditEventId: ownerEntryId }
      if (known !== undefined) {
        yield* repo.settle(known.id, settled)
      } else {
        yield* repo.insertSettled({
          id: `pay_${crypto.randomUUID()}`,
          chainId,
          paymentHash: lower(leaf.hash),
          delegationId: r.delegationId,
          accountId: r.accountId,
          reservationId,
          signerAddress: undefined,
          scheme,
          asset: lower(terms.asset),
          payTo: lower(terms.payTo),
          amount: terms.amount,
          facilitator: lower(leaf.delegate as Address),
          resourceUrl: undefined,
          resourceDescription: undefined,
          validBefore: new Date(terms.validBefore * 1000)
        }, settled)
      }
      return { ownerEntryId, delegateEntryId }
    })

  const unwind = (chainId: number, r: UnwoundRedemption) =>
    Effect.gen(function*() {
      for (const p of yield* repo.lockSettledAt(chainId, r.blockHash, r.logIndex)) {
        if (p.reservation_id !== null) yield* grants.reholdReservation(p.reservation_id, BigInt(p.amount), p.valid_before)
        yield* repo.unsettle(p.id)
        // The follower compensates the owner's entry (the inclusion names it); the agent's copy is this feature's.
        const grant = yield* grants.findById(p.delegation_id)
        const delegate = grant === undefined ? undefined : yield* grants.accountByAddress(lower(grant.delegatee_address), chainId)
        if (delegate === undefined || delegate.id === p.account_id) continue
        const token = tokens.byAddress(chainId, p.asset)
        const units = BigInt(p.settled_units ?? "0")
        yield* recorder.record({
          accountId: delegate.id,
          declineId: `reorg:x402-via:${r.blockHash}:${r.logIndex}`,
          actor: p.facilitator,
          action: X402_ACTION,
          ...(token === undefined ? { token: p.asset } : { amount: fromUnits(units, token.decimals), token: token.symbol }),
          recipient: p.pay_to,
          chain: chains.nameOf(chainId),
          chainId,
          status: "reorged",
          declineReason: "reorged: the payment's settlement is no longer on chain",
          provenance: "onchain_reorg",
          txHash: r.txHash,
          delegationId: p.delegation_id
        }).pipe(Effect.asVoid, Effect.catchTag("AuditDuplicate", () => Effect.void))
      }
    })

  yield* hooks.register("payments.x402", settle)
  yield* hooks.registerUnwind("payments.x402", unwind)
})).pipe(
  Layer.provide(Layer.mergeAll(
    RedemptionHooksLive,
    PaymentRepo.layer,
    DelegationRepo.layer,
    TokenRegistry.layer,
    AuditLive,
    Notifications.layer
  ))
)
