/**
 * The client side of the ERC-7710 method, as an `@x402/core` `SchemeNetworkClient` (one
 * instance per scheme, registered on `eip155:*`): checks the requirement it was handed
 * (every field, the payer's chain and tokens, the caller's ceiling) and only then asks its
 * `PaymentAuthorizer` for the signed payment. `payingFetch` (PayingFetch.ts) wires it into
 * `@x402/fetch`.
 */
import type { PaymentPayloadContext, PaymentPayloadResult, PaymentRequirements, SchemeNetworkClient } from "@x402/core/types"
import type { PaymentAuthorizer } from "./Authorizer.ts"
import { checkRequirement, type CheckedResource, type PayerScope, PaymentRefused } from "./Requirements.ts"
import { type PaymentScheme, X402_VERSION } from "./Wire.ts"

export interface ClientSchemeOptions {
  readonly scope: PayerScope
  readonly authorizer: PaymentAuthorizer
  /** The most one payment may be, in the asset's base units (`upto`: the most it may allow). */
  readonly ceiling: bigint
  /** The resource the current 402 is for (checked by the caller), handed to the authorizer. */
  readonly resource?: () => CheckedResource | undefined
  /** Wall clock in ms (the deadline is now + `maxTimeoutSeconds`). */
  readonly now?: () => number
  /** Sees every refusal before it is thrown (the fetch wrapper rethrows it typed). */
  readonly onRefused?: (refused: PaymentRefused) => void
}

const atomic = (s: string | undefined): bigint | undefined => (s !== undefined && /^[0-9]{1,78}$/.test(s) ? BigInt(s) : undefined)

export class Erc7710ClientScheme implements SchemeNetworkClient {
  constructor(readonly scheme: PaymentScheme, private readonly options: ClientSchemeOptions) {}

  async createPaymentPayload(
    x402Version: number,
    paymentRequirements: PaymentRequirements,
    context?: PaymentPayloadContext
  ): Promise<PaymentPayloadResult> {
    const refuse = (refused: PaymentRefused): never => {
      this.options.onRefused?.(refused)
      throw refused
    }
    if (x402Version !== X402_VERSION) refuse(new PaymentRefused("x402Version", `must be ${X402_VERSION}`))
    // The core's own spend cap, when one is configured, binds too.
    const coreCap = atomic(context?.maxAmountPerPayment)
    const ceiling = coreCap !== undefined && coreCap < this.options.ceiling ? coreCap : this.options.ceiling
    const checked = checkRequirement(paymentRequirements, this.options.scope, ceiling)
    if (!checked.ok) return refuse(checked.refused)
    if (checked.value.scheme !== this.scheme) return refuse(new PaymentRefused("scheme", `this client instance pays ${this.scheme}`))
    const now = Math.floor((this.options.now ?? Date.now)() / 1000)
    const payload = await this.options.authorizer.authorize({
      requirement: checked.value,
      validBefore: now + checked.value.maxTimeoutSeconds,
      resource: this.options.resource?.()
    }).catch((e: unknown) => e instanceof PaymentRefused ? refuse(e) : Promise.reject(e))
    return { x402Version: X402_VERSION, payload: { ...payload } }
  }
}
