/**
 * The parties of an x402 payment under a grant on the run's local chain, built without the
 * service (src/payments/x402/world/LocalParties.ts: the kit + viem, as an agent or attacker
 * would), the owner's revoke, and an x402 world on loopback (facilitator service + resource
 * server, in process).
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types"
import { Redacted } from "effect"
import { type Address, http } from "viem"
import { createBundlerClient } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { disableCalls } from "../../../src/delegations/Caveats.ts"
import type { Erc7710Payload, PayerScope } from "@das/x402-erc7710"
import { startFacilitator } from "../../../src/payments/x402/world/FacilitatorService.ts"
import { type GrantLimits, localParties, type SmartAccount } from "../../../src/payments/x402/world/LocalParties.ts"
import { startResourceServer } from "../../../src/payments/x402/world/ResourceServer.ts"
import { testNetwork } from "../../support/TestChain.ts"

export const net = testNetwork()
export const usdc = net.tokens.usd.address
export const usdt = net.tokens.usdt.address
export const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
export const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address

/** What an agent paying from this grant can pay with: the local chain, USDC and USDT. */
export const scope: PayerScope = {
  chainId: net.chainId,
  assets: [
    { address: usdc, decimals: 6, symbol: "USDC" },
    { address: usdt, decimals: 6, symbol: "USDT" }
  ]
}

const parties = localParties({ ...net, deployer: privateKeyToAccount(Redacted.value(net.deployerKey)).address })
export const { chain, publicClient, setEth, balanceOf, fundedKey, smartAccount, makeOwner, signGrant } = parties
export type { GrantLimits, SmartAccount }

/** The owner revokes the grant: its own user operation (`disableDelegation`), through the bundler. */
export const revokeGrant = async (owner: SmartAccount, grant: Delegation) => {
  const bundler = createBundlerClient({ client: publicClient, transport: http(net.bundlerUrl), account: owner.account, pollingInterval: 50 })
  const hash = await bundler.sendUserOperation({ calls: [...disableCalls(net.delegation.DelegationManager, [grant])] })
  const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 30_000 })
  if (!receipt.success) throw new Error("the revoke operation failed")
}

/** A facilitator service and a resource server charging USDC, on loopback, for `merchant`. */
export const startWorld = async (options: { readonly price?: bigint; readonly maxTimeoutSeconds?: number } = {}) => {
  const facilitatorKey = await fundedKey()
  const facilitator = await startFacilitator({ network: net, key: facilitatorKey, pollingIntervalMs: 50 })
  const merchant = randomAddress()
  const resource = await startResourceServer({
    facilitatorUrl: facilitator.url,
    chainId: net.chainId,
    asset: { address: usdc, decimals: 6, symbol: "USDC" },
    payTo: merchant,
    price: options.price ?? USD(0.01),
    meteredMax: USD(1),
    unitPrice: USD(0.05),
    ...(options.maxTimeoutSeconds === undefined ? {} : { maxTimeoutSeconds: options.maxTimeoutSeconds })
  })
  return {
    facilitator,
    facilitatorKey,
    resource,
    merchant,
    close: async () => {
      await resource.close()
      await facilitator.close()
    }
  }
}
export type World = Awaited<ReturnType<typeof startWorld>>

/** The requirements a resource server of `world` would send for this payment. */
export const requirementOf = (
  world: World,
  input: { readonly scheme: "exact" | "upto"; readonly amount: bigint; readonly payTo?: Address; readonly asset?: Address; readonly maxTimeoutSeconds?: number }
): PaymentRequirements => ({
  scheme: input.scheme,
  network: `eip155:${net.chainId}`,
  asset: input.asset ?? usdc,
  amount: input.amount.toString(),
  payTo: input.payTo ?? world.merchant,
  maxTimeoutSeconds: input.maxTimeoutSeconds ?? 60,
  extra: { assetTransferMethod: "erc7710", facilitatorAddress: world.facilitator.address }
})

/** The client's PAYMENT-SIGNATURE document for `requirements` carrying `payload`. */
export const paymentOf = (requirements: PaymentRequirements, payload: Erc7710Payload): PaymentPayload => ({
  x402Version: 2,
  resource: { url: "http://127.0.0.1/report" },
  accepted: requirements,
  payload: { ...payload }
})
