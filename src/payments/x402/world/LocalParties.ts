/**
 * The parties of an x402 payment under a grant on a local network (anvil: `anvil_setBalance`
 * and the unlocked deployer mint tokens), built without the service, with the kit and viem:
 * owners and agents as deployed HybridDeleGators, the owner's signed grant (Grant.ts, with
 * an optional root RedeemerEnforcer: the grant's redeemer rule). For the demo, the bench
 * and the tests; never for a real network.
 */
import { type Delegation, Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder } from "@metamask/smart-accounts-kit/utils"
import {
  type Address,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  pad,
  parseEther,
  parseUnits,
  type PublicClient
} from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../../chain/Chain.ts"
import { permitStablecoinAbi } from "../../../chain/contracts/TokenPaymaster.ts"
import { sendFromDevAccount } from "../../../chain/DevAccount.ts"
import type { NetworkDescription } from "../../../chain/Network.ts"
import { legTypedData, randomSalt } from "../../../delegations/Caveats.ts"
import { makeGrant } from "../../../delegations/Grant.ts"
import type { GrantContext } from "../Authorizer.ts"

export interface LocalNetworkKeys extends Pick<NetworkDescription, "chainId" | "rpcUrl" | "bundlerUrl" | "delegation" | "tokens"> {
  /** The unlocked dev account that deployed the tokens (their minter). */
  readonly deployer: Address
}

export interface GrantLimits {
  /** USDC: total budget, per-action maximum; and the action count. */
  readonly budget?: number
  readonly perAction?: number
  readonly maxActions?: number
  readonly recipients?: ReadonlyArray<Address>
  /** Unix seconds; default an hour from now. */
  readonly expiresAtSeconds?: number
  /** A root RedeemerEnforcer allowing only these redeemers (the grant's redeemer rule). */
  readonly redeemers?: ReadonlyArray<Address>
}

const units = (n: number) => parseUnits(n.toFixed(6), 6)

export const localParties = (network: LocalNetworkKeys) => {
  const chain = viemChainOf(network)
  const publicClient = createPublicClient({ chain, transport: http(network.rpcUrl), pollingInterval: 50 }) as PublicClient
  const usdc = network.tokens.usd.address

  const setEth = (address: Address, eth = "10") =>
    publicClient.request({ method: "anvil_setBalance" as never, params: [address, `0x${parseEther(eth).toString(16)}`] as never })

  const balanceOf = (token: Address, holder: Address) =>
    publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [holder] })

  /** A key with ETH for gas. */
  const fundedKey = async (): Promise<Hex> => {
    const key = generatePrivateKey()
    await setEth(privateKeyToAccount(key).address)
    return key
  }

  /**
   * Mints test stablecoins from the unlocked deployer: one mint at a time from here, and again
   * when another sender of the deployer took the nonce first (DevAccount.ts).
   */
  let minting: Promise<unknown> = Promise.resolve()
  const mint = (token: "usd" | "usdt", to: Address, amount: number): Promise<void> => {
    const data = encodeFunctionData({ abi: permitStablecoinAbi, functionName: "mint", args: [to, units(amount)] })
    const once = async () => {
      await sendFromDevAccount(network.rpcUrl, { from: network.deployer, to: network.tokens[token].address, data })
    }
    const next = minting.then(once)
    minting = next.catch(() => undefined)
    return next
  }

  /** A HybridDeleGator of a fresh key, deployed through its factory, holding ETH. */
  const smartAccount = async () => {
    const key = generatePrivateKey()
    const eoa = privateKeyToAccount(key)
    const account = await toMetaMaskSmartAccount({
      client: publicClient as never,
      implementation: Implementation.Hybrid,
      deployParams: [eoa.address, [], [], []],
      deploySalt: pad("0x00", { size: 32 }),
      signer: { account: eoa },
      environment: network.delegation as never
    })
    const { factory, factoryData } = await account.getFactoryArgs()
    const deployer = createWalletClient({ chain, transport: http(network.rpcUrl), account: privateKeyToAccount(await fundedKey()) })
    const hash = await deployer.sendTransaction({ to: factory!, data: factoryData! })
    await publicClient.waitForTransactionReceipt({ hash })
    await setEth(account.address)
    return { key, eoa, account, address: account.address }
  }
  type SmartAccount = Awaited<ReturnType<typeof smartAccount>>

  /** An owner: a deployed smart account holding `usd` USDC and as many USDT. */
  const makeOwner = async (usd = 100) => {
    const owner = await smartAccount()
    await mint("usd", owner.address, usd)
    await mint("usdt", owner.address, usd)
    return owner
  }

  /** The owner's grant to `delegate` over USDC, signed with the owner's key, as the agent holds it. */
  const signGrant = async (owner: SmartAccount, delegate: Address, limits: GrantLimits = {}): Promise<GrantContext> => {
    const now = Math.floor(Date.now() / 1000)
    const made = makeGrant(network.delegation, {
      delegator: owner.address,
      delegate,
      budgets: [{ token: usdc, units: units(limits.budget ?? 20), perActionUnits: units(limits.perAction ?? 5) }],
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
      : createCaveatBuilder(network.delegation as never).addCaveat("redeemer", { redeemers: [...limits.redeemers] }).build()
    const unsigned: Delegation = {
      ...made.delegation,
      caveats: [...redeemer.map((c) => ({ ...c, args: "0x" as Hex })), ...made.delegation.caveats]
    }
    const signature = await owner.eoa.signTypedData(
      legTypedData(unsigned, network.chainId, network.delegation.DelegationManager) as unknown as Parameters<typeof owner.eoa.signTypedData>[0]
    )
    return { chainId: network.chainId, environment: network.delegation, grant: { ...unsigned, signature }, scope: made.scope }
  }

  return { chain, publicClient, setEth, balanceOf, fundedKey, mint, smartAccount, makeOwner, signGrant }
}

export type LocalParties = ReturnType<typeof localParties>
export type SmartAccount = Awaited<ReturnType<LocalParties["smartAccount"]>>
