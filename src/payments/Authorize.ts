/**
 * Authorizing an x402 payment under a grant (docs/payments.md, "Through the service"): the
 * agent's offer and resource read as hostile input (the x402 client's own checks,
 * Requirements.ts: a 400 naming the field), the chain from the offer's network (Chains), the
 * grant's limits evaluated like any action under the grant's row lock (Policy.evaluate with
 * the usage reconciled with the chain, Usage.ts), the grant's redeemer rule against the
 * facilitator, then the amount (`upto`: the ceiling) reserved until the payment's deadline and
 * the unsigned payment delegation answered. A decline is a 422 with its `declineReason`, a
 * `declined` entry on the owner's log and its notification, and nothing reserved.
 */
import { Effect } from "effect"
import { type Address, getAddress, type Hex } from "viem"
import { BadRequest, NotFound, OutOfScope } from "../api/Errors.ts"
import { AuditRecorder } from "../audit/Recorder.ts"
import type { Signer } from "../auth/Middleware.ts"
import { mapUpstream } from "../builds/Wire.ts"
import { ChainUnavailable } from "../chain/Chain.ts"
import { Chains } from "../chain/Chains.ts"
import { type Delegation, legTypedData, randomSalt } from "../delegations/Caveats.ts"
import { DelegationRepo, type DelegationRow } from "../delegations/DelegationRepo.ts"
import type { Redeemers } from "../delegations/Domain.ts"
import { redeemArgs } from "../delegations/Grant.ts"
import { delegationHashOf } from "../follower/Redemptions.ts"
import { isNative } from "../tokens/Native.ts"
import { evaluate, fromUnits } from "../delegations/Policy.ts"
import { makeUsage } from "../delegations/Usage.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import type { X402PaymentAuthorization, X402PaymentRequest } from "./Domain.ts"
import { PaymentRepo } from "./PaymentRepo.ts"
import { toPayment } from "./Records.ts"
import {
  chainIdOf,
  checkPaymentRequired,
  checkRequirement,
  type DelegationEnvironment,
  MAX_UINT256,
  paymentCaveats,
  PaymentRefused,
  type PaymentTerms,
  X402_VERSION
} from "@das/x402-erc7710"

const lower = <S extends string>(s: S) => s.toLowerCase() as S

/** The audit action of an x402 payment (its decline, its settlement). */
export const X402_ACTION = "x402_payment"

/** A refusal of the x402 checks as a 400 naming the request's field. */
const refused = (r: PaymentRefused) => {
  const path = r.field.startsWith("resource") ? `body.${r.field}` : `body.requirement.${r.field.replace(/^accepts(\[\])?$/, "")}`.replace(/\.$/, "")
  return new BadRequest({ message: `${path}: ${r.reason}`, details: { issues: [{ path, message: r.reason }] } })
}

/** Why the grant's redeemer rule refuses `facilitator` as the redeemer of a chain below it; `undefined`: it may. */
export const redeemerProblem = (redeemers: Redeemers | undefined, delegate: string, facilitator: Address): string | undefined => {
  // No rule (a grant built before rules existed) or redelegation: anyone the delegate delegates to may redeem.
  if (redeemers === undefined || redeemers.mode === "redelegation") return undefined
  const allowed = [lower(delegate), ...redeemers.addresses.map(lower)]
  if (allowed.includes(lower(facilitator))) return undefined
  return `The grant's redeemer rule (${redeemers.mode === "delegate" ? "only the delegate" : `the delegate and ${redeemers.addresses.join(", ")}`}) ` +
    `does not name the facilitator ${facilitator}: a payment it settles would be refused on chain (RedeemerEnforcer:unauthorized-redeemer)`
}

/**
 * The unsigned payment delegation under a grant's leg: the package's `makePaymentDelegation`
 * with the parent's hash taken from the leg's permission id (the grant's hash, stored when it
 * was signed) instead of hashing the grant again with the kit's abi-utils on every payment, most
 * of this call's CPU (docs/performance.md, "Issue 46 item 4 (h48b)"). Equal to the package's
 * (test/payments/x402/delegation.test.ts); a wrong authority would be refused by the
 * DelegationManager, which checks each link's authority against its parent's hash.
 */
export const paymentDelegationUnder = (
  environment: DelegationEnvironment,
  leg: { readonly permissionId: Hex; readonly delegation: Delegation },
  input: { readonly facilitator: Address; readonly terms: PaymentTerms; readonly salt: Hex }
): Delegation => ({
  delegate: input.facilitator,
  delegator: leg.delegation.delegate,
  authority: lower(leg.permissionId),
  caveats: [...paymentCaveats(environment, input.terms)],
  salt: input.salt,
  signature: "0x"
})

export const makeAuthorize = Effect.gen(function*() {
  const repo = yield* PaymentRepo
  const grants = yield* DelegationRepo
  const chains = yield* Chains
  const tokens = yield* TokenRegistry
  const audit = yield* AuditRecorder
  const decimalsOf = (address: string) => tokens.all.find((t) => t.address === lower(address))?.decimals ?? 18
  const usage = yield* makeUsage(decimalsOf)

  /** The grant the signer holds (its key is the delegate, or one of its accounts is); pending or failed ones never existed. */
  const held = (signer: Signer, id: string) =>
    grants.findHeld(id, lower(signer.address)).pipe(
      Effect.flatMap((row) =>
        row === undefined || row.status === "pending" || row.status === "failed"
          ? Effect.fail(new NotFound({ message: `No delegation ${id} held by this signer` }))
          : Effect.succeed(row)
      )
    )

  const decline = (row: DelegationRow, reason: string, message: string, what: { amount: number; token: string; recipient: string }, resetsAt?: string) =>
    Effect.gen(function*() {
      const recorded = yield* audit.recordDecline({
        accountId: row.account_id,
        actor: row.delegatee_address,
        action: X402_ACTION,
        ...what,
        chain: chains.nameOf(row.chain_id),
        chainId: row.chain_id,
        declineReason: reason,
        delegationId: row.id
      }).pipe(Effect.orDie)
      return yield* new OutOfScope({
        message,
        declineReason: reason,
        details: { auditEventId: recorded.entry.id, delegationId: row.id, ...(resetsAt === undefined ? {} : { resetsAt }) }
      })
    })

  const authorize = Effect.fn("Payments.authorize")(function*(signer: Signer, input: X402PaymentRequest) {
    // The offer and the resource: hostile input, read by the x402 client's own checks.
    const document = checkPaymentRequired({ x402Version: X402_VERSION, resource: input.resource, accepts: [input.requirement] })
    if (!document.ok) return yield* refused(document.refused)
    const chainId = chainIdOf(input.requirement.network)
    if (chainId === undefined) {
      return yield* refused(new PaymentRefused("network", `${JSON.stringify(input.requirement.network)} is not a CAIP-2 eip155:<chainId> network`))
    }
    const net = yield* chains.get(chainId).pipe(
      Effect.mapError((e) => new BadRequest({ message: `body.requirement.network: ${e.message}`, details: { ...e.details, path: "body.requirement.network" } }))
    )
    const row = yield* held(signer, input.delegationId)
    if (row.chain_id !== chainId) {
      return yield* refused(new PaymentRefused("network", `the grant ${row.id} is on eip155:${row.chain_id}, not ${input.requirement.network}`))
    }
    const assets = tokens.all
      .filter((t) => t.chainId === chainId && !isNative(t.address))
      .map((t) => ({ address: getAddress(t.address), decimals: t.decimals, symbol: t.symbol }))
    const checked = checkRequirement(input.requirement, { chainId, assets }, MAX_UINT256)
    if (!checked.ok) return yield* refused(checked.refused)
    const offer = checked.value
    const token = tokens.byAddress(chainId, offer.asset)!
    const leg = row.legs[0]
    if (leg === undefined || leg.scope === undefined || row.legs.length !== 1) {
      return yield* new BadRequest({ message: `The grant ${row.id} predates grants with one delegation: it cannot pay x402 requests` })
    }
    const now = new Date()
    // The chain reads at once (each is a round trip, none depends on another): whether a smart-account
    // delegate is deployed, the latest block, and the enforcers' state (the grant's row lock is never
    // held across a chain call, so these come first).
    const [deployed, latest, fromChain] = yield* Effect.all([
      lower(row.delegatee_address) === lower(signer.address) ? Effect.succeed(true) : mapUpstream(net.chain.isDeployed(row.delegatee_address as Address)),
      mapUpstream(Effect.tryPromise({
        try: () => net.chain.client.getBlock({ blockTag: "latest" }),
        catch: (cause) => new ChainUnavailable({ operation: "getBlock", message: String(cause), chainId })
      })),
      usage.onChain(row, now)
    ], { concurrency: "unbounded" })
    // A smart-account delegate signs through its ERC-1271, which needs its code on chain.
    if (!deployed) {
      return yield* new BadRequest({
        message: `The grant's delegate ${row.delegatee_address} is a smart account that is not deployed yet: the DelegationManager ` +
          "checks its signature of the payment through its ERC-1271, so it must be deployed first (any operation of the account deploys it)",
        details: { delegate: row.delegatee_address }
      })
    }

    // The deadline is read by the chain (TimestampEnforcer) and the facilitator against the next block's time:
    // the latest block's, or the wall clock when the (automining) chain is idle, as the facilitator reads it.
    const nowSeconds = Math.max(Math.floor(now.getTime() / 1000), Number(latest.timestamp))
    const expirySeconds = Math.floor(new Date(row.policy_set.expiresAt).getTime() / 1000)
    // Redeemable for the offer's timeout, never past the grant's own expiry (the chain would refuse it then anyway).
    const validBefore = Math.min(nowSeconds + offer.maxTimeoutSeconds, expirySeconds)
    const what = { amount: fromUnits(offer.amount, token.decimals), token: token.symbol, recipient: lower(offer.payTo) }

    const verdict = yield* Effect.gen(function*() {
      // The grant's row lock, its status, frozen flag and ledger in one round trip.
      const { row: locked, state: use } = (yield* usage.lockedStateOf(row, fromChain))!
      const result = evaluate(
        locked.policy_set,
        decimalsOf,
        { status: locked.status, accountFrozen: locked.frozen, ...use },
        { recipient: offer.payTo, amount: what.amount, units: offer.amount, token: token.symbol },
        now
      )
      if (result._tag !== "Allowed") return { _tag: "Refused" as const, result }
      const redeemer = redeemerProblem(locked.policy_set.redeemers, locked.delegatee_address, offer.facilitator)
      if (redeemer !== undefined) {
        return { _tag: "Refused" as const, result: { _tag: "Declined" as const, reason: "redeemer_not_allowed", message: redeemer, resetsAt: undefined } }
      }
      const grant = redeemArgs(net.network.delegation, leg.delegation, leg.scope!, { token: offer.asset, to: offer.payTo })
      if (grant === undefined) return yield* Effect.die(new Error("an allowed payment is outside its grant's on-chain scope"))
      const delegation = paymentDelegationUnder(net.network.delegation, leg, {
        facilitator: offer.facilitator,
        terms: { scheme: offer.scheme, asset: offer.asset, payTo: offer.payTo, amount: offer.amount, validBefore },
        salt: randomSalt()
      })
      const reservationId = `rsv_${crypto.randomUUID()}`
      const expiresAt = new Date(validBefore * 1000)
      yield* grants.insertReservation({
        id: reservationId,
        delegationId: row.id,
        token: lower(offer.asset),
        units: offer.amount,
        recipient: lower(offer.payTo),
        expiresAt
      })
      const payment = {
        id: `pay_${crypto.randomUUID()}`,
        chainId,
        paymentHash: lower(delegationHashOf({ ...delegation, salt: BigInt(delegation.salt) })),
        delegationId: row.id,
        accountId: row.account_id,
        reservationId,
        signerAddress: lower(signer.address),
        scheme: offer.scheme,
        asset: lower(offer.asset),
        payTo: lower(offer.payTo),
        amount: offer.amount,
        facilitator: lower(offer.facilitator),
        resourceUrl: document.value.url,
        resourceDescription: document.value.description,
        validBefore: expiresAt
      }
      const stored = yield* repo.insert(payment)
      return { _tag: "Reserved" as const, delegation, grant, stored }
    }).pipe(grants.withTransaction, Effect.orDie)

    if (verdict._tag === "Refused") {
      const result = verdict.result
      if (result._tag === "Invalid") return yield* new BadRequest({ message: `body.requirement.amount: ${result.message}` })
      return yield* decline(row, result.reason, result.message, what, result.resetsAt)
    }
    const { delegation, grant, stored } = verdict
    const manager = net.network.delegation.DelegationManager
    const td = legTypedData(delegation, chainId, manager)
    return {
      payment: toPayment(stored, tokens, now),
      delegation: { ...delegation, caveats: delegation.caveats.map((c) => ({ ...c })) },
      typedData: {
        domain: { ...td.domain, verifyingContract: lower(td.domain.verifyingContract) },
        types: Object.fromEntries(Object.entries(td.types).map(([k, v]) => [k, v.map((f) => ({ ...f }))])),
        primaryType: td.primaryType,
        message: { ...td.message, caveats: td.message.caveats.map((c) => ({ ...c })), salt: td.message.salt.toString() }
      },
      grant: { ...grant, caveats: grant.caveats.map((c) => ({ ...c })), salt: grant.salt as Hex },
      delegationManager: manager,
      delegator: getAddress(row.delegator_address)
    } satisfies X402PaymentAuthorization
  })

  return { authorize }
})
