/**
 * `localGrantAuthorizer`: the `PaymentAuthorizer` (packages/x402-erc7710) that signs the payment
 * delegation itself from the grant and the agent's key, around the service (tests, the world's
 * demos). It needs the service's grant layout (`redeemArgs`), so it lives here, not in the package.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { type Address, getAddress, type Hex } from "viem"
import type { DelegationEnvironment } from "../../chain/Network.ts"
import { legTypedData, randomSalt } from "../../delegations/Caveats.ts"
import { type GrantScope, redeemArgs } from "../../delegations/Grant.ts"
import { type AgentSigner, makePaymentDelegation, type PaymentAuthorizer, PaymentRefused, permissionContextOf } from "@das/x402-erc7710"

/** What the agent holds of its grant: the owner's signed delegation and the order of its terms. */
export interface GrantContext {
  readonly chainId: number
  readonly environment: DelegationEnvironment
  readonly grant: Delegation
  readonly scope: GrantScope
}

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
