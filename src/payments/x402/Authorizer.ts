/**
 * Who produces the signed payment for one checked requirement: the port between the x402
 * client scheme and whatever holds the agent's authority. Today `localGrantAuthorizer` signs
 * the payment delegation itself from the grant and the agent's key; later the service
 * answers "what must I sign" (the same delegation, checked against the grant's limits and
 * reserved against its budget) and the agent only signs it.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { type Address, getAddress, type Hex, type LocalAccount } from "viem"
import type { DelegationEnvironment } from "../../chain/Network.ts"
import { legTypedData, randomSalt } from "../../delegations/Caveats.ts"
import { type GrantScope, redeemArgs } from "../../delegations/Grant.ts"
import { makePaymentDelegation, permissionContextOf } from "./PaymentDelegation.ts"
import { type CheckedRequirement, type CheckedResource, PaymentRefused } from "./Requirements.ts"
import type { Erc7710Payload } from "./Wire.ts"

/** One payment to authorize: the checked requirement, its deadline, the resource it pays for. */
export interface PaymentRequest {
  readonly requirement: CheckedRequirement
  /** Unix seconds: the payment delegation is redeemable strictly before it. */
  readonly validBefore: number
  readonly resource: CheckedResource | undefined
}

export interface PaymentAuthorizer {
  /** The account that pays: the grant's delegator (the owner's smart account). */
  readonly payer: Address
  /** The scheme payload of `PAYMENT-SIGNATURE`; throws `PaymentRefused` when this payment is not allowed. */
  readonly authorize: (request: PaymentRequest) => Promise<Erc7710Payload>
}

/** What the agent holds of its grant: the owner's signed delegation and the order of its terms. */
export interface GrantContext {
  readonly chainId: number
  readonly environment: DelegationEnvironment
  readonly grant: Delegation
  readonly scope: GrantScope
}

/** The agent's key: only what signing a delegation needs. */
export type AgentSigner = Pick<LocalAccount, "address" | "signTypedData">

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * Signs the payment delegation locally: the agent (`delegate`, default its EOA; its smart
 * account when the grant names that, whose ERC-1271 accepts the EOA's signature) re-delegates
 * exactly the payment to the facilitator under the grant.
 */
export const localGrantAuthorizer = (
  context: GrantContext,
  agent: AgentSigner,
  options: { readonly delegate?: Address } = {}
): PaymentAuthorizer => {
  const delegate = options.delegate ?? agent.address
  if (!same(context.grant.delegate, delegate)) {
    throw new Error(`the grant names ${context.grant.delegate} as its delegate, not ${delegate}`)
  }
  const manager = context.environment.DelegationManager
  return {
    payer: getAddress(context.grant.delegator),
    authorize: async ({ requirement, validBefore }) => {
      const parent = redeemArgs(context.environment, context.grant, context.scope, { token: requirement.asset, to: requirement.payTo })
      if (parent === undefined) {
        const tokenKnown = context.scope.tokens.some((t) => same(t, requirement.asset))
        throw tokenKnown
          ? new PaymentRefused("payTo", `${requirement.payTo} is not on the grant's recipient allowlist`)
          : new PaymentRefused("asset", `${requirement.asset} is not a token of the grant`)
      }
      const leaf = makePaymentDelegation(context.environment, {
        parent: context.grant,
        facilitator: requirement.facilitator,
        terms: {
          scheme: requirement.scheme,
          asset: requirement.asset,
          payTo: requirement.payTo,
          amount: requirement.amount,
          validBefore
        },
        salt: randomSalt()
      })
      const signature: Hex = await agent.signTypedData(
        legTypedData(leaf, context.chainId, manager) as unknown as Parameters<AgentSigner["signTypedData"]>[0]
      )
      return {
        delegationManager: manager,
        delegator: getAddress(context.grant.delegator),
        permissionContext: permissionContextOf([{ ...leaf, signature }, parent])
      }
    }
  }
}
