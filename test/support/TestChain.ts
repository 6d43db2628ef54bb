/**
 * The run's shared local network (started once in globalSetup.ts) as layers, and
 * test-only chain helpers (minting test stablecoins).
 */
import { Effect, Layer, Redacted } from "effect"
import { createWalletClient, http, parseUnits, type Address, type Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { inject } from "vitest"
import { ChainStackLive } from "../../src/App.ts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { permitStablecoinAbi as testStablecoinAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import type { LocalNetworkDescription } from "../../src/chain/LocalNetwork.ts"
import { LocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { Network } from "../../src/chain/Network.ts"

export const testNetwork = (): LocalNetworkDescription => {
  const json = inject("network")
  return {
    ...json,
    paymaster: { address: json.paymaster.address, signerKey: Redacted.make(json.paymaster.signerKey as Hex) },
    deployerKey: Redacted.make(json.deployerKey as Hex)
  } as LocalNetworkDescription
}

export interface TestChainOptions {
  /** Talk to the bundler at this URL instead of the run's Alto (a proxy, a closed port, a stand-in). */
  readonly bundlerUrl?: string
  /** Read and write the chain at this URL instead of the run's anvil (a fork of it). */
  readonly rpcUrl?: string
}

/** The service's own chain stack (src/App.ts `ChainStackLive`) over the run's shared local network. */
export const TestChainLive = (options?: TestChainOptions) => {
  const shared = testNetwork()
  const description = {
    ...shared,
    ...(options?.bundlerUrl === undefined ? {} : { bundlerUrl: options.bundlerUrl }),
    ...(options?.rpcUrl === undefined ? {} : { rpcUrl: options.rpcUrl })
  }
  return ChainStackLive.pipe(
    Layer.provideMerge(Layer.mergeAll(Layer.succeed(Network, description), Layer.succeed(LocalNetwork, description)))
  )
}

/**
 * Mints test stablecoins. Several test files share the chain and its deployer
 * (the minter), so the transaction is sent with `eth_sendTransaction` from the
 * unlocked dev account: anvil assigns the nonce, concurrent mints never collide.
 */
export const mint = (token: "usd" | "usdt", to: Address, amount: number) =>
  Effect.promise(async () => {
    const network = testNetwork()
    const deployer = privateKeyToAccount(Redacted.value(network.deployerKey)).address
    const wallet = createWalletClient({ chain: viemChainOf(network), transport: http(network.rpcUrl) })
    const info = network.tokens[token]
    const hash = await wallet.writeContract({
      account: deployer,
      address: info.address,
      abi: testStablecoinAbi,
      functionName: "mint",
      args: [to, parseUnits(String(amount), info.decimals)]
    })
    return hash
  })
