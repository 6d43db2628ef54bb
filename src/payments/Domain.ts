/**
 * The wire of x402 payments through the service (docs/payments.md, "Through the service"):
 * what an agent sends to have a payment authorized under its grant (the resource server's
 * offer, verbatim, and the resource), what it gets back to sign, and the record of a payment.
 *
 * The offer's fields are taken as the 402 sent them (strings of bounded length): the x402
 * checks (Requirements.ts) then read them as hostile input and answer a 400 naming the field.
 */
import { Schema } from "effect"
import { DelegationTypedData, DfDelegation } from "../delegations/Domain.ts"
import { Address, ChainId, DecimalString, Hash32, Id, TextOfLength, Timestamp } from "../domain/Primitives.ts"

/** One `accepts[]` entry of a `PAYMENT-REQUIRED`, as the resource server sent it (other `extra` keys are ignored). */
export const X402Offer = Schema.Struct({
  scheme: TextOfLength(1, 32),
  network: TextOfLength(1, 64),
  asset: TextOfLength(1, 128),
  /** Base units of `asset`, a decimal string (`upto`: the most the server may settle). */
  amount: TextOfLength(1, 128),
  payTo: TextOfLength(1, 128),
  maxTimeoutSeconds: Schema.Finite,
  extra: Schema.Struct({
    assetTransferMethod: TextOfLength(1, 32),
    /** The facilitator's settlement address: the payment delegation's delegate. */
    facilitatorAddress: Schema.optionalKey(TextOfLength(1, 128))
  })
}).annotate({ identifier: "X402Offer" })
export type X402Offer = typeof X402Offer.Type

/** `PaymentRequired.resource`: what the payment is for (the owner's log keeps the URL). */
export const X402Resource = Schema.Struct({
  url: TextOfLength(1, 2_048),
  description: Schema.optionalKey(TextOfLength(0, 1_024)),
  mimeType: Schema.optionalKey(TextOfLength(0, 128))
}).annotate({ identifier: "X402Resource" })

const example = {
  delegationId: "dlg_5c1f0a4e-2b7d-4f39-9a61-0d3e8c2b7f10",
  requirement: {
    scheme: "exact",
    network: "eip155:31337",
    asset: "0x998abeb3E57409262aE5b751f60747921B33613E",
    amount: "10000",
    payTo: "0xe134Bbf2eB9Cb43Bc5a55FeEF29eCE6F2255D3FF",
    maxTimeoutSeconds: 60,
    extra: { assetTransferMethod: "erc7710", facilitatorAddress: "0x94f023D589ac20AfBCA2F2CcA1113806B5167f58" }
  },
  resource: { url: "http://127.0.0.1:4021/report", description: "Today's report", mimeType: "application/json" }
}

export const X402PaymentRequest = Schema.Struct({
  /** The grant the agent holds. */
  delegationId: Id,
  /** The offer the agent chose from `PAYMENT-REQUIRED.accepts`, verbatim. */
  requirement: X402Offer,
  /** `PAYMENT-REQUIRED.resource`. */
  resource: X402Resource
}).annotate({ identifier: "X402PaymentRequest", examples: [example] })
export type X402PaymentRequest = typeof X402PaymentRequest.Type

export const X402PaymentStatus = Schema.Literals(["authorized", "settled", "expired"])

/** One payment under a grant: authorized by the service (what it reserved) and, once the chain showed it, settled. */
export const X402Payment = Schema.Struct({
  id: Schema.String,
  /** The payment delegation's hash (its id on chain: the leaf's `RedeemedDelegation`). */
  paymentHash: Hash32,
  delegationId: Schema.String,
  chainId: ChainId,
  scheme: Schema.Literals(["exact", "upto"]),
  asset: Address,
  /** The asset's symbol when the token registry knows it. */
  token: Schema.optionalKey(Schema.String),
  payTo: Address,
  /** Base units: `exact` the price, `upto` the ceiling signed. */
  amount: DecimalString,
  facilitator: Address,
  /** What it paid for (absent for a payment signed around the service). */
  resource: Schema.optionalKey(Schema.Struct({ url: Schema.String, description: Schema.optionalKey(Schema.String) })),
  /** The payment is redeemable strictly before this instant (and its reservation held until then). */
  validBefore: Timestamp,
  /** `expired`: authorized, never settled, past `validBefore` (its reservation no longer counts). */
  status: X402PaymentStatus,
  /** The reservation against the grant's budget (absent for a payment signed around the service). */
  reservationId: Schema.optionalKey(Schema.String),
  /** Base units that moved (`upto`: what the server settled, at most `amount`). */
  settledUnits: Schema.optionalKey(DecimalString),
  /** The same in token units, when the token is known. */
  settledAmount: Schema.optionalKey(Schema.Finite),
  txHash: Schema.optionalKey(Hash32),
  /** The owner's audit entry of the settlement (action `x402_payment`). */
  auditEventId: Schema.optionalKey(Schema.String),
  createdAt: Timestamp,
  settledAt: Schema.optionalKey(Timestamp)
}).annotate({ identifier: "X402Payment" })
export type X402Payment = typeof X402Payment.Type

/**
 * What the agent signs and how it assembles `PAYMENT-SIGNATURE`: sign `typedData` (EIP-712,
 * domain DelegationManager) with the key of the grant's delegate, put the signature on
 * `delegation`, and send `payload = { delegationManager, delegator, permissionContext:
 * encodeDelegations([signed delegation, grant]) }`.
 */
export const X402PaymentAuthorization = Schema.Struct({
  payment: X402Payment,
  /** The payment delegation, unsigned: from the grant's delegate to the facilitator, under the grant. */
  delegation: DfDelegation,
  typedData: DelegationTypedData,
  /** The owner's signed grant with the caveat args of this token and recipient: the context's second delegation. */
  grant: DfDelegation,
  delegationManager: Address,
  /** The account that pays (the grant's delegator): `payload.delegator`. */
  delegator: Address
}).annotate({ identifier: "X402PaymentAuthorization" })
export type X402PaymentAuthorization = typeof X402PaymentAuthorization.Type
