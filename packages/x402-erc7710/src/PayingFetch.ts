/**
 * A `fetch` that pays a 402 through the ERC-7710 method, in one line for an agent:
 *
 *   const pay = payingFetch({ scope, authorizer })
 *   const res = await pay("https://api.example/report", { maxAmount: 10_000n })
 *
 * Built on `@x402/fetch`'s `wrapFetchWithPayment` and `@x402/core`'s client extension points
 * (scheme registration, a selection policy, the `onPaymentRequired` hook), not a copy of
 * them. Per call: the caller's ceiling (`maxAmount`, base units; without one the call pays
 * nothing), the whole `PAYMENT-REQUIRED` document checked before any scheme runs, then each
 * offer; a refusal is a typed `PaymentRefused` naming the field, thrown before anything is
 * signed, and no paid request is sent.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client"
import { decodePaymentResponseHeader } from "@x402/core/http"
import type { PaymentRequirements, SettleResponse } from "@x402/core/types"
import { wrapFetchWithPayment } from "@x402/fetch"
import type { PaymentAuthorizer } from "./Authorizer.ts"
import { Erc7710ClientScheme } from "./ClientScheme.ts"
import { checkPaymentRequired, checkRequirement, type CheckedResource, type PayerScope, PaymentRefused } from "./Requirements.ts"
import { HEADERS, SCHEMES } from "./Wire.ts"

export interface PayingFetchConfig {
  readonly scope: PayerScope
  readonly authorizer: PaymentAuthorizer
  readonly fetch?: typeof globalThis.fetch
  /** The ceiling of a call that sets none; absent: such a call pays nothing. */
  readonly defaultMaxAmount?: bigint
  /** Wall clock in ms, for payment deadlines. */
  readonly now?: () => number
}

export interface PaidRequestInit extends RequestInit {
  /** The most this call may pay, in the asset's base units (`upto`: the most it may allow). */
  readonly maxAmount?: bigint
}

export type PayingFetch = (input: RequestInfo | URL, init?: PaidRequestInit) => Promise<Response>

/** Why none of `accepts` is payable: the single reason, or each offer's. */
const noneAcceptable = (accepts: ReadonlyArray<unknown>, refusals: ReadonlyArray<PaymentRefused>): PaymentRefused =>
  accepts.length === 1
    ? refusals[0]!
    : new PaymentRefused("accepts", `no offer is payable: ${refusals.map((r, i) => `[${i}] ${r.message}`).join("; ")}`)

export const payingFetch = (config: PayingFetchConfig): PayingFetch => async (input, init) => {
  const { maxAmount, ...requestInit } = init ?? {}
  const ceiling = maxAmount ?? config.defaultMaxAmount
  let refusal: PaymentRefused | undefined
  let resource: CheckedResource | undefined
  const refuse = (r: PaymentRefused): never => {
    refusal ??= r
    throw r
  }
  const payable = (requirements: ReadonlyArray<unknown>) =>
    requirements.map((r) => ({ requirement: r, check: checkRequirement(r, config.scope, ceiling ?? 0n) }))

  const client = new x402Client()
    // The ceiling is this call's, enforced by the checks; the core's USD cap knows no local tokens.
    .setSpendControls(false)
    .registerPolicy((_version, requirements) =>
      payable(requirements).flatMap((p) => (p.check.ok ? [p.requirement as PaymentRequirements] : []))
    )
  for (const scheme of SCHEMES) {
    client.register("eip155:*", new Erc7710ClientScheme(scheme, {
      scope: config.scope,
      authorizer: config.authorizer,
      ceiling: ceiling ?? 0n,
      resource: () => resource,
      ...(config.now === undefined ? {} : { now: config.now }),
      onRefused: (r) => {
        refusal ??= r
      }
    }))
  }
  const http = new x402HTTPClient(client).onPaymentRequired(async ({ paymentRequired, requestUrl }) => {
    // Runs before the core selects or a scheme signs: the whole document, then each offer.
    if (ceiling === undefined) refuse(new PaymentRefused("maxAmount", "this call set no ceiling, so it pays nothing"))
    const document = checkPaymentRequired(paymentRequired)
    if (!document.ok) return refuse(document.refused)
    resource = { ...document.value, requestedUrl: requestUrl }
    const offers = payable(paymentRequired.accepts)
    if (!offers.some((o) => o.check.ok)) {
      refuse(noneAcceptable(paymentRequired.accepts, offers.flatMap((o) => (o.check.ok ? [] : [o.check.refused]))))
    }
  })
  try {
    return await wrapFetchWithPayment(config.fetch ?? globalThis.fetch, http)(input, requestInit)
  } catch (e) {
    if (refusal !== undefined) throw refusal
    throw e
  }
}

/** The settlement a paid response carries in `PAYMENT-RESPONSE`, if any. */
export const settlementOf = (response: Response): SettleResponse | undefined => {
  const header = response.headers.get(HEADERS.response)
  if (header === null) return undefined
  try {
    return decodePaymentResponseHeader(header)
  } catch {
    return undefined
  }
}
