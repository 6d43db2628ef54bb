/**
 * One line on each stock x402 package:
 *
 *   // a merchant's resource server (`@x402/express`), with its stock routes
 *   registerErc7710Server(new x402ResourceServer(facilitatorClient), { networks: ["eip155:31337"], assets: [usdc] })
 *   // an agent (`@x402/fetch`)
 *   const pay = wrapFetchWithPayment(fetch, registerErc7710Client(new x402Client(), { scope, authorizer, maxAmount: 50_000n }))
 *
 * Both go through the packages' own extension points (`x402ResourceServer.register`,
 * `x402Client.register`); nothing of the stock packages is replaced.
 */
import type { x402Client } from "@x402/core/client"
import type { x402ResourceServer } from "@x402/core/server"
import type { PaymentAuthorizer } from "./Authorizer.ts"
import { Erc7710ClientScheme } from "./ClientScheme.ts"
import type { PayableAsset, PayerScope } from "./Requirements.ts"
import { Erc7710ServerScheme } from "./ServerScheme.ts"
import { type Network, networkOf, type PaymentScheme, SCHEMES } from "./Wire.ts"

export interface ServerRegistration {
  /** CAIP-2 networks the server charges on (`eip155:<chainId>`). */
  readonly networks: ReadonlyArray<Network>
  /** The tokens it charges in; the first prices money amounts (`"$0.01"`). */
  readonly assets: ReadonlyArray<PayableAsset>
  /** Default both `exact` and `upto`. */
  readonly schemes?: ReadonlyArray<PaymentScheme>
}

/** Offer the ERC-7710 method on a stock resource server (`@x402/express`'s `paymentMiddleware` takes it as is). */
export const registerErc7710Server = <S extends x402ResourceServer>(server: S, options: ServerRegistration): S => {
  for (const network of options.networks) {
    for (const scheme of options.schemes ?? SCHEMES) server.register(network, new Erc7710ServerScheme(scheme, options.assets))
  }
  return server
}

export interface ClientRegistration {
  /** The payer's chain and the tokens it pays in (an offer outside them is refused before signing). */
  readonly scope: PayerScope
  /** Who signs the payment: `serviceAuthorizer` (the service checks it against the grant first). */
  readonly authorizer: PaymentAuthorizer
  /** The most one payment may be, in the asset's base units (`upto`: the most it may allow). */
  readonly maxAmount: bigint
  /** Wall clock in ms, for payment deadlines. */
  readonly now?: () => number
}

/**
 * Pay the ERC-7710 method from a stock `x402Client` (`@x402/fetch`'s `wrapFetchWithPayment` takes
 * it as is). The core's spend controls allow only its default (USD) assets unless told otherwise:
 * this sets them to also allow the scope's assets, each capped at `maxAmount` (the scheme checks
 * the same ceiling again). Call `setSpendControls` after it to configure them otherwise.
 */
export const registerErc7710Client = <C extends x402Client>(client: C, options: ClientRegistration): C => {
  client.setSpendControls({
    allowedAssets: options.scope.assets.map((a) => ({
      network: networkOf(options.scope.chainId),
      asset: a.address,
      maxAmountPerPayment: options.maxAmount.toString()
    }))
  })
  for (const scheme of SCHEMES) {
    client.register("eip155:*", new Erc7710ClientScheme(scheme, {
      scope: options.scope,
      authorizer: options.authorizer,
      ceiling: options.maxAmount,
      ...(options.now === undefined ? {} : { now: options.now })
    }))
  }
  return client
}
