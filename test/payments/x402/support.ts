/**
 * The parties of an x402 payment under a grant, on the run's local chain, built without the
 * service (the kit + viem, as an agent or attacker would): an owner with a deployed
 * HybridDeleGator holding USDC, an agent (EOA or its own deployed smart account), the
 * owner's signed grant (src/delegations/Grant.ts, optionally with a root RedeemerEnforcer),
 * and an x402 world on loopback (facilitator service + resource server, in process).
 */
import { type Delegation, Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder } from "@metamask/smart-accounts-kit/utils"
import { type Address, createPublicClient, createWalletClient, erc20Abi, type Hex, http, pad, parseEther, type PublicClient } from "viem"
import { createBundlerClient } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../../src/chain/Chain.ts"
import { disableCalls, legTypedData, randomSalt } from "../../../src/delegations/Caveats.ts"
import { makeGrant } from "../../../src/delegations/Grant.ts"
import type { GrantContext } from "../../../src/payments/x402/Authorizer.ts"
import type { PayerScope } from "../../../src/payments/x402/Requirements.ts"
import type { Erc7710Payload } from "../../../src/payments/x402/Wire.ts"
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types"
import { startFacilitator } from "../../../src/payments/x402/world/FacilitatorService.ts"
import { startResourceServer } from "../../../src/payments/x402/world/ResourceServer.ts"
import { mint, testNetwork } from "../../support/TestChain.ts"
import { Effect } from "effect"

export const net = testNetwork()
export const chain = viemChainOf(net)
export const publicClient = createPublicClient({ chain, transport: http(net.rpcUrl), pollingInterval: 50 }) as PublicClient
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

export const setEth = (address: Address, eth = "10") =>
  publicClient.request({ method: "anvil_setBalance" as never, params: [address, `0x${parseEther(eth).toString(16)}`] as never })

export const balanceOf = (token: Address, holder: Address) =>
  publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [holder] })

/** A key with ETH for gas: the facilitator's, an attacker's. */
export const fundedKey = async () => {
  const key = generatePrivateKey()
  await setEth(privateKeyToAccount(key).address)
  return key
}

/** A HybridDeleGator of a fresh key, deployed through the factory (any funded EOA may send the deployment) and holding ETH. */
export const smartAccount = async () => {
  const key = generatePrivateKey()
  const eoa = privateKeyToAccount(key)
  const account = await toMetaMaskSmartAccount({
    client: publicClient as never,
    implementation: Implementation.Hybrid,
    deployParams: [eoa.address, [], [], []],
    deploySalt: pad("0x00", { size: 32 }),
    signer: { account: eoa },
    environment: net.delegation as never
  })
  const { factory, factoryData } = await account.getFactoryArgs()
  const deployer = privateKeyToAccount(await fundedKey())
  const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account: deployer })
  const hash = await wallet.sendTransaction({ to: factory!, data: factoryData! })
  await publicClient.waitForTransactionReceipt({ hash })
  await setEth(account.address)
  return { key, eoa, account, address: account.address }
}
export type SmartAccount = Awaited<ReturnType<typeof smartAccount>>

/** An owner: a deployed smart account holding `usd` USDC (and as much USDT). */
export const makeOwner = async (usd = 100) => {
  const owner = await smartAccount()
  await Effect.runPromise(mint("usd", owner.address, usd))
  await Effect.runPromise(mint("usdt", owner.address, usd))
  return owner
}

export interface GrantLimits {
  /** Total budget (USDC), per action maximum, action count. */
  readonly budget?: number
  readonly perAction?: number
  readonly maxActions?: number
  readonly recipients?: ReadonlyArray<Address>
  /** Unix seconds; default an hour from now. */
  readonly expiresAtSeconds?: number
  /** A root RedeemerEnforcer allowing only these redeemers (the grant's "redeemer rule"). */
  readonly redeemers?: ReadonlyArray<Address>
}

/** The owner's grant to `delegate` over USDC, signed by the owner's key, as the agent holds it. */
export const signGrant = async (owner: SmartAccount, delegate: Address, limits: GrantLimits = {}): Promise<GrantContext> => {
  const now = Math.floor(Date.now() / 1000)
  const made = makeGrant(net.delegation, {
    delegator: owner.address,
    delegate,
    budgets: [{ token: usdc, units: USD(limits.budget ?? 20), perActionUnits: USD(limits.perAction ?? 5) }],
    targets: [usdc],
    recipients: [...(limits.recipients ?? [])],
    maxActions: limits.maxActions ?? 10,
    startSeconds: now - 60,
    expiresAtSeconds: limits.expiresAtSeconds ?? now + 3_600,
    salt: randomSalt()
  })
  if (made._tag === "Invalid") throw new Error(made.message)
  const redeemer = limits.redeemers === undefined
    ? []
    : createCaveatBuilder(net.delegation as never).addCaveat("redeemer", { redeemers: [...limits.redeemers] }).build()
  const unsigned: Delegation = { ...made.delegation, caveats: [...redeemer.map((c) => ({ ...c, args: "0x" as Hex })), ...made.delegation.caveats] }
  const signature = await owner.eoa.signTypedData(
    legTypedData(unsigned, net.chainId, net.delegation.DelegationManager) as unknown as Parameters<typeof owner.eoa.signTypedData>[0]
  )
  return { chainId: net.chainId, environment: net.delegation, grant: { ...unsigned, signature }, scope: made.scope }
}

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
