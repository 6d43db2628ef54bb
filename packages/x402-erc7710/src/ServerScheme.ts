/**
 * The resource-server side of the ERC-7710 method, as an `@x402/core` `SchemeNetworkServer`:
 * what lets an `x402ResourceServer` (and `@x402/express`'s middleware) offer `exact` or `upto`
 * with `extra.assetTransferMethod: "erc7710"`, which the published `@x402/evm` server schemes
 * do not list. It turns a route's price into an amount of a known token and copies the
 * facilitator's settlement address (from its `/supported`) into `extra.facilitatorAddress`:
 * the delegate the client's payment delegation must name.
 */
import { convertToTokenAmount, parseMoney } from "@x402/core/utils"
import type { AssetAmount, Network, PaymentRequirements, Price, SchemeNetworkServer, SupportedKind } from "@x402/core/types"
import { getAddress, isAddress } from "viem"
import type { PayableAsset } from "./Requirements.ts"
import { ERC7710, type PaymentScheme } from "./Wire.ts"

export class Erc7710ServerScheme implements SchemeNetworkServer {
  readonly defaultAssetTransferMethod = ERC7710
  // The client signs before the handler runs; the facilitator verifies before and settles after it.
  readonly paymentFlows = { [ERC7710]: { supported: ["authorization"], default: "authorization" } } as const

  /** `assets[0]` prices money amounts ("$0.01"); an `AssetAmount` price may name any of them. */
  constructor(readonly scheme: PaymentScheme, private readonly assets: ReadonlyArray<PayableAsset>) {
    if (assets.length === 0) throw new Error("a resource server needs at least one asset to charge in")
  }

  getAssetDecimals(asset: string, _network: Network): number | undefined {
    return this.assets.find((a) => a.address.toLowerCase() === asset.toLowerCase())?.decimals
  }

  async parsePrice(price: Price, network: Network): Promise<AssetAmount> {
    if (typeof price === "object") {
      if (this.getAssetDecimals(price.asset, network) === undefined) throw new Error(`${price.asset} is not an asset this server charges in`)
      return { amount: price.amount, asset: getAddress(price.asset), extra: price.extra ?? {} }
    }
    const usd = this.assets[0]!
    return { amount: convertToTokenAmount(parseMoney(price).amount, usd.decimals), asset: usd.address, extra: {} }
  }

  validateFacilitatorSupport(_network: Network, kind: SupportedKind): string | void {
    const address = kind.extra?.["facilitatorAddress"]
    if (typeof address !== "string" || !isAddress(address)) return "the facilitator announces no facilitatorAddress for erc7710"
  }

  async enhancePaymentRequirements(requirements: PaymentRequirements, kind: SupportedKind): Promise<PaymentRequirements> {
    const address = kind.extra?.["facilitatorAddress"]
    return {
      ...requirements,
      extra: {
        ...requirements.extra,
        assetTransferMethod: ERC7710,
        ...(typeof address === "string" && isAddress(address) ? { facilitatorAddress: getAddress(address) } : {})
      }
    }
  }
}
