/**
 * Who produces the signed payment for one checked requirement: the port between the x402
 * client scheme and whatever holds the agent's authority. `serviceAuthorizer`
 * (ServiceAuthorizer.ts) asks the delegated-authority service what to sign (checked against
 * the grant's limits and reserved against its budget) and signs it with the agent's key; the
 * service's own tests also sign from the grant alone (around the service).
 */
import type { Address, LocalAccount } from "viem"
import type { CheckedRequirement, CheckedResource } from "./Requirements.ts"
import type { Erc7710Payload } from "./Wire.ts"

/** One payment to authorize: the checked requirement, its deadline, the resource it pays for. */
export interface PaymentRequest {
  readonly requirement: CheckedRequirement
  /** Unix seconds: the payment delegation is redeemable strictly before it. */
  readonly validBefore: number
  readonly resource: CheckedResource | undefined
}

export interface PaymentAuthorizer {
  /** The account that pays: the grant's delegator (the owner's smart account), when known beforehand. */
  readonly payer?: Address | undefined
  /** The scheme payload of `PAYMENT-SIGNATURE`; throws `PaymentRefused` when this payment is not allowed. */
  readonly authorize: (request: PaymentRequest) => Promise<Erc7710Payload>
}

/** The agent's key: only what signing a delegation needs. */
export type AgentSigner = Pick<LocalAccount, "address" | "signTypedData">
