/**
 * `localChannel`: the agent opens a payment channel from its grant alone, around the service
 * (tests, bench, demos), as `localGrantAuthorizer` signs one payment: it re-delegates to the
 * merchant's settlement key, under the grant, a channel bounded by the VoucherEnforcer
 * (packages/x402-erc7710/src/Channel.ts), and signs each payment as a cumulative voucher. It
 * needs the service's grant layout (`redeemArgs`), so it lives here, not in the package.
 */
import { type Address, getAddress, type Hex } from "viem"
import { legTypedData, randomSalt } from "../../delegations/Caveats.ts"
import { redeemArgs } from "../../delegations/Grant.ts"
import { type AgentSigner, channelPayer, type ChannelTerms, makeChannelDelegation, PaymentRefused, permissionContextOf } from "@das/x402-erc7710"
import type { GrantContext } from "./Authorizer.ts"

export interface ChannelRequest {
  /** The VoucherEnforcer on the grant's chain. */
  readonly enforcer: Address
  /** The merchant's settlement key: the channel's delegate, the only one who may settle it. */
  readonly merchant: Address
  readonly token: Address
  readonly payTo: Address
  /** The most the channel may ever move (base units). */
  readonly cap: bigint
  /** Unix seconds: the channel settles strictly before it. */
  readonly validBefore: number
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * Signs the channel delegation with the agent's key (its EOA is the vouchers' signer; the
 * delegation's delegator is the grant's delegate, the EOA or its smart account) and returns
 * the payer that signs each payment's voucher.
 */
export const localChannel = async (
  context: GrantContext,
  agent: AgentSigner,
  request: ChannelRequest,
  options: { readonly delegate?: Address } = {}
) => {
  const delegate = options.delegate ?? agent.address
  if (!same(context.grant.delegate, delegate)) throw new Error(`the grant names ${context.grant.delegate} as its delegate, not ${delegate}`)
  const parent = redeemArgs(context.environment, context.grant, context.scope, { token: request.token, to: request.payTo })
  if (parent === undefined) {
    throw context.scope.tokens.some((t) => same(t, request.token))
      ? new PaymentRefused("payTo", `${request.payTo} is not on the grant's recipient allowlist`)
      : new PaymentRefused("asset", `${request.token} is not a token of the grant`)
  }
  const terms: ChannelTerms = { signer: agent.address, token: request.token, payTo: request.payTo, cap: request.cap, salt: randomSalt() }
  const leaf = makeChannelDelegation(context.environment, {
    parent: context.grant,
    merchant: request.merchant,
    enforcer: request.enforcer,
    terms,
    validBefore: request.validBefore,
    salt: randomSalt()
  })
  const signature: Hex = await agent.signTypedData(
    legTypedData(leaf, context.chainId, context.environment.DelegationManager) as unknown as Parameters<AgentSigner["signTypedData"]>[0]
  )
  const permissionContext = permissionContextOf([{ ...leaf, signature }, parent])
  const payer = channelPayer({
    chainId: context.chainId,
    enforcer: request.enforcer,
    signer: { signTypedData: (doc) => agent.signTypedData(doc as unknown as Parameters<AgentSigner["signTypedData"]>[0]) },
    terms,
    permissionContext
  })
  return { terms, permissionContext, payer, owner: getAddress(context.grant.delegator) }
}
