/**
 * The `PaymentAuthorizer` of an agent that pays through the service (docs/payments.md,
 * "Through the service"): for each checked requirement it asks `POST /payments/x402` what to
 * sign (the service checks the payment against the grant, declines with the grant's reason,
 * reserves the amount until the deadline), checks that the delegation it is handed pays
 * exactly that offer, signs it with the agent's key and assembles the standard payload.
 *
 *   const pay = payingFetch({ scope, authorizer: serviceAuthorizer({ baseUrl, token, delegationId, payer, agent }) })
 *
 * Plain `fetch` and viem: an agent needs neither Effect nor the service's client.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { type Address, getAddress, type Hex } from "viem"
import type { AgentSigner, PaymentAuthorizer } from "./Authorizer.ts"
import { permissionContextOf } from "./PaymentDelegation.ts"
import { PaymentRefused } from "./Requirements.ts"
import { ERC7710, networkOf } from "./Wire.ts"

export interface ServiceAuthorizerConfig {
  /** The service's base URL and the agent's session token (sign-in with the agent's key). */
  readonly baseUrl: string
  readonly token: string
  /** The grant the agent holds. */
  readonly delegationId: string
  /**
   * The account that pays: the grant's delegator. Without it the service's answer names it, and
   * must name the same account as the grant it hands back (the chain checks the grant's signature
   * against that account, so a wrong answer can only make the payment fail, never pay from another).
   */
  readonly payer?: Address
  /** The grant's delegate key (or the signer of the delegate smart account). */
  readonly agent: AgentSigner
  readonly fetch?: typeof globalThis.fetch
}

interface WireDelegation {
  readonly delegate: Address
  readonly delegator: Address
  readonly authority: Hex
  readonly caveats: ReadonlyArray<{ readonly enforcer: Address; readonly terms: Hex; readonly args: Hex }>
  readonly salt: Hex
  readonly signature: Hex
}

interface WireAuthorization {
  readonly payment: { readonly id: string; readonly amount: string; readonly payTo: string; readonly asset: string; readonly scheme: string }
  readonly delegation: WireDelegation
  readonly typedData: { readonly message: { readonly delegate: string; readonly delegator: string; readonly salt: string } } & Record<string, unknown>
  readonly grant: WireDelegation
  readonly delegationManager: Address
  readonly delegator: Address
}

interface WireError {
  readonly error?: { readonly code?: string; readonly message?: string; readonly declineReason?: string }
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** The field of a service refusal: a 400 names it in its message (`body.requirement.payTo: ...`). */
const fieldOf = (message: string): string => /^body\.(?:requirement\.)?([A-Za-z.[\]]+):/.exec(message)?.[1] ?? "payment"

export const serviceAuthorizer = (config: ServiceAuthorizerConfig): PaymentAuthorizer => {
  const fetchImpl = config.fetch ?? globalThis.fetch
  return {
    ...(config.payer === undefined ? {} : { payer: getAddress(config.payer) }),
    authorize: async ({ requirement, resource }) => {
      const offer = {
        scheme: requirement.scheme,
        network: networkOf(requirement.chainId),
        asset: requirement.asset,
        amount: requirement.amount.toString(),
        payTo: requirement.payTo,
        maxTimeoutSeconds: requirement.maxTimeoutSeconds,
        extra: { assetTransferMethod: ERC7710, facilitatorAddress: requirement.facilitator }
      }
      const res = await fetchImpl(`${config.baseUrl}/payments/x402`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${config.token}` },
        body: JSON.stringify({
          delegationId: config.delegationId,
          requirement: offer,
          resource: {
            url: resource?.url ?? "",
            ...(resource?.description === undefined ? {} : { description: resource.description })
          }
        })
      })
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as WireError
        const message = body.error?.message ?? `the service answered ${res.status}`
        // A decline of the grant's rules keeps its reason; a 400 names the field.
        throw body.error?.declineReason !== undefined
          ? new PaymentRefused("grant", `${body.error.declineReason}: ${message}`)
          : new PaymentRefused(res.status === 400 ? fieldOf(message) : "service", message)
      }
      const auth = (await res.json()) as WireAuthorization
      // Sign only a delegation from our grant's delegate to this facilitator for this offer.
      const d = auth.delegation
      const m = auth.typedData.message
      if (
        !same(d.delegate, requirement.facilitator) || !same(m.delegate, d.delegate) || !same(m.delegator, d.delegator) ||
        BigInt(m.salt) !== BigInt(d.salt) || !same(auth.delegator, config.payer ?? auth.grant.delegator) ||
        !same(auth.grant.delegator, auth.delegator) || !same(auth.grant.delegate, d.delegator) ||
        auth.payment.amount !== requirement.amount.toString() || !same(auth.payment.payTo, requirement.payTo) ||
        !same(auth.payment.asset, requirement.asset) || auth.payment.scheme !== requirement.scheme
      ) {
        throw new PaymentRefused("service", "the service answered a payment other than the one asked for; nothing was signed")
      }
      const signature: Hex = await config.agent.signTypedData({
        ...auth.typedData,
        message: { ...auth.typedData.message, salt: BigInt(m.salt) }
      } as unknown as Parameters<AgentSigner["signTypedData"]>[0])
      return {
        delegationManager: getAddress(auth.delegationManager),
        delegator: getAddress(auth.delegator),
        permissionContext: permissionContextOf([
          { ...d, signature } as unknown as Delegation,
          auth.grant as unknown as Delegation
        ])
      }
    }
  }
}
