/**
 * The client side of the ERC-7710 method, as an `@x402/core` `SchemeNetworkClient` (one
 * instance per scheme, registered on `eip155:*`): checks the requirement it was handed
 * (every field, the payer's chain and tokens, the caller's ceiling) and only then asks its
 * `PaymentAuthorizer` for the signed payment. Registered on a stock `x402Client`
 * (`registerErc7710Client`, Register.ts) its own hook checks the whole `PAYMENT-REQUIRED`
 * document first and hands its resource to the authorizer; `payingFetch` (PayingFetch.ts)
 * does the same per call, with a per-call ceiling.
 */
import type { PaymentCreationContext } from "@x402/core/client"
import type { PaymentPayloadContext, PaymentPayloadResult, PaymentRequirements, SchemeClientHooks, SchemeNetworkClient } from "@x402/core/types"
import type { PaymentAuthorizer } from "./Authorizer.ts"
import { checkPaymentRequired, checkRequirement, type CheckedResource, type PayerScope, PaymentRefused } from "./Requirements.ts"
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
  /** The resource of each 402 being paid, by the requirement the core selected (concurrent payments do not mix). */
  private readonly resources = new WeakMap<object, CheckedResource>()

  constructor(readonly scheme: PaymentScheme, private readonly options: ClientSchemeOptions) {}

  /**
   * Run by the core before it creates the payment, with the whole `PAYMENT-REQUIRED` document:
   * a document that fails the checks is refused (nothing signed), else its resource is kept for
   * the authorizer. (`payingFetch` checks the document itself and passes `resource`.)
   */
  readonly schemeHooks: SchemeClientHooks = {
    onBeforePaymentCreation: async (context: PaymentCreationContext) => {
      const document = checkPaymentRequired(context.paymentRequired)
      if (!document.ok) {
        this.options.onRefused?.(document.refused)
        return { abort: true, reason: document.refused.message }
      }
      this.resources.set(context.selectedRequirements, document.value)
    }
  }

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
      resource: this.options.resource?.() ?? this.resources.get(paymentRequirements)
    }).catch((e: unknown) => e instanceof PaymentRefused ? refuse(e) : Promise.reject(e))
    return { x402Version: X402_VERSION, payload: { ...payload } }
  }
}
