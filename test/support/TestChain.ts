/**
 * The run's shared local network (started once in globalSetup.ts) as layers, and
 * test-only chain helpers (minting test stablecoins).
 */
import { Effect, Layer, Redacted } from "effect"
import { encodeFunctionData, parseUnits, type Address } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { inject } from "vitest"
import { ChainStackLive } from "../../src/App.ts"
import { permitStablecoinAbi as testStablecoinAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import { Chains } from "../../src/chain/Chains.ts"
import { fromJson, type LocalNetworkDescription, LocalNetworks } from "../../src/chain/LocalNetwork.ts"
import { sendFromDevAccount } from "../../src/chain/DevAccount.ts"

/** The run's primary local network (chain 31337). */
export const testNetwork = (): LocalNetworkDescription => fromJson(inject("network"))
/** Every local network of the run, the primary first. */
export const testNetworks = (): ReadonlyArray<LocalNetworkDescription> => inject("networks").map(fromJson)
/** The run's second chain (31338): the same contracts at the same addresses, another chain id. */
export const secondNetwork = (): LocalNetworkDescription => testNetworks()[1]!

export interface TestChainOptions {
  /** Talk to the bundler at this URL instead of the run's Alto (a proxy, a closed port, a stand-in). */
  readonly bundlerUrl?: string
  /** Read and write the chain at this URL instead of the run's anvil (a fork of it). */
  readonly rpcUrl?: string
  /** New heads pushed from this WebSocket URL instead of the run's anvil's. */
  readonly wsUrl?: string
  /** Which chain the URLs above replace (default: the primary). */
  readonly chainId?: number
  /** Serve only the primary chain (a test about one network that need not pay for two). */
  readonly primaryOnly?: boolean
  /** Serve these networks instead of the run's (e.g. a network of the test file's own, whose clock it moves). */
  readonly networks?: ReadonlyArray<LocalNetworkDescription>
}

/**
 * The service's chains (`Chains`, over the run's local networks) and what is built on them
 * (src/App.ts `ChainStackLive`), plus the primary chain's own services as the single-chain
 * tags (`Network`, `Chain`, `Bundler`, ...) for tests that talk to one chain.
 */
export const TestChainLive = (options?: TestChainOptions) => {
  const target = options?.chainId ?? testNetwork().chainId
  const served = options?.networks ?? (options?.primaryOnly === true ? [testNetwork()] : testNetworks())
  const networks = served.map((n) =>
    n.chainId !== target ? n : {
      ...n,
      ...(options?.bundlerUrl === undefined ? {} : { bundlerUrl: options.bundlerUrl }),
      // Another node (a fork, a proxy): the run's anvil's pushed heads are not its own.
      ...(options?.rpcUrl === undefined ? {} : { rpcUrl: options.rpcUrl, wsUrl: undefined }),
      ...(options?.wsUrl === undefined ? {} : { wsUrl: options.wsUrl })
    }
  )
  return ChainStackLive.pipe(
    Layer.provideMerge(Chains.single()),
    Layer.provideMerge(Layer.succeed(LocalNetworks, networks)),
    Layer.provideMerge(Chains.fromNetworks(networks))
  )
}

/**
 * Mints test stablecoins. Several test files share the chain and its deployer
 * (the minter): sent from the unlocked dev account, the node assigning the nonce
 * (DevAccount.ts), and included before the caller simulates against the balance.
 */
export const mint = (token: "usd" | "usdt" | "dai", to: Address, amount: number, chainId?: number) =>
  Effect.suspend(() => mintOn(testNetworks().find((n) => n.chainId === (chainId ?? testNetwork().chainId))!, token, to, amount))

/** `mint` on a given network (e.g. a test file's own). */
export const mintOn = (network: LocalNetworkDescription, token: "usd" | "usdt" | "dai", to: Address, amount: number) =>
  Effect.promise(async () => {
    const deployer = privateKeyToAccount(Redacted.value(network.deployerKey)).address
    const info = network.tokens[token]!
    const data = encodeFunctionData({ abi: testStablecoinAbi, functionName: "mint", args: [to, parseUnits(String(amount), info.decimals)] })
    const { transactionHash: hash } = await sendFromDevAccount(network.rpcUrl, { from: deployer, to: info.address, data })
    return hash
  })
