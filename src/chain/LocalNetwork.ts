/**
 * A complete ERC-4337 network on this machine, from npm alone: anvil (chain 31337),
 * EntryPoint v0.7 at its canonical address, the MetaMask Delegation Framework, two test
 * stablecoins, a sponsoring VerifyingPaymaster, an ERC-20 TokenPaymaster (gas in the stablecoins)
 * and the Alto bundler, each on a free port
 * of 127.0.0.1. A scoped resource: closing the scope stops every child process; the
 * children also stop when this process dies (`spawnGuarded`, in platform/ChildProcess.ts).
 * With a state folder (the service's `DATA_DIR/chains`), a chain keeps its state across
 * restarts (anvil's `--state`) and the next start finds its contracts there instead of
 * deploying them again (LocalState.ts).
 */
import entryPointArtifact from "@account-abstraction/contracts/artifacts/EntryPoint.json" with { type: "json" }
import verifyingPaymasterArtifact from "@account-abstraction/contracts/artifacts/VerifyingPaymaster.json" with { type: "json" }
import { LogicalOrWrapperEnforcer as logicalOrWrapperEnforcerAbi } from "@metamask/delegation-abis"
import { LogicalOrWrapperEnforcer as logicalOrWrapperEnforcerBytecode } from "@metamask/delegation-abis/bytecode"
import { deploySmartAccountsEnvironment } from "@metamask/smart-accounts-kit/utils"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Config, Context, Duration, Effect, Fiber, Layer, Option, Redacted } from "effect"
import {
  type Abi,
  type Address,
  concat,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  parseEther
} from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { approvalEnforcerAbi, approvalEnforcerBytecode } from "./contracts/Approvals.ts"
import { basketPeriodEnforcerAbi, basketPeriodEnforcerBytecode } from "./contracts/Basket.ts"
import { argumentCapEnforcerAbi, argumentCapEnforcerBytecode, transferCapEnforcerAbi, transferCapEnforcerBytecode } from "./contracts/Enforcers.ts"
import { agentCommerceAbi, agentCommerceBytecode } from "./contracts/AgentCommerce.ts"
import { agentIdentityEnforcerAbi, agentIdentityEnforcerBytecode } from "./contracts/AgentIdentity.ts"
import { eRC1967ProxyAbi, eRC1967ProxyBytecode } from "./contracts/erc8004/ERC1967Proxy.ts"
import { identityRegistryUpgradeableAbi, identityRegistryUpgradeableBytecode } from "./contracts/erc8004/IdentityRegistryUpgradeable.ts"
import { reputationRegistryUpgradeableAbi, reputationRegistryUpgradeableBytecode } from "./contracts/erc8004/ReputationRegistryUpgradeable.ts"
import { erc8004BootstrapAbi, erc8004BootstrapBytecode } from "./contracts/Erc8004Local.ts"
import { panicFreezeEnforcerAbi, panicFreezeEnforcerBytecode } from "./contracts/PanicFreeze.ts"
import { recoveryAbi, recoveryBytecode } from "./contracts/Recovery.ts"
import { spendGuardAbi, spendGuardBytecode } from "./contracts/SpendGuard.ts"
import { permitStablecoinAbi, permitStablecoinBytecode, tokenPaymasterAbi, tokenPaymasterBytecode } from "./contracts/TokenPaymaster.ts"
import { keptNetwork, saveNetwork, stateFileOf, verifyKept } from "./LocalState.ts"
import { LocalNetworkError, spawnGuarded, spawnOnFreePort, waitReady } from "./LocalProcesses.ts"
import { defaultChainName, type DelegationEnvironment, ENTRY_POINT_V07, Network, type NetworkDescription } from "./Network.ts"

export { LocalNetworkError }

/** The deterministic deployment proxy anvil carries by default. */
const DETERMINISTIC_DEPLOYER: Address = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
/** The salt that puts EntryPoint v0.7 at 0x0000000071727De22E5E9d8BAf0edAc6f37da032. */
const ENTRY_POINT_SALT: Hex = "0x90d8084deab30c2a37c45e8d47f49f2f7965183cb6990a98943ef94940681de3"

/** anvil's well-known dev keys (mnemonic "test test ... junk"): public, local use only. */
const ANVIL_KEYS = {
  deployer: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  bundlerExecutor: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  bundlerUtility: "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6"
} as const satisfies Record<string, Hex>

export const LOCAL_CHAIN_ID = 31337
/** The local default serves two chains (issue 29): the same contracts at the same addresses, distinct chain ids. */
export const LOCAL_CHAIN_IDS: ReadonlyArray<number> = [LOCAL_CHAIN_ID, 31338]

/** The local TokenPaymaster's fixed price: 3,000 token units (6 decimals: 3,000e6) per ETH of gas. */
const TOKENS_PER_ETH = 3_000_000_000n
const TOKEN_PAYMASTER_MARKUP_BPS = 11_000n
const TOKEN_PAYMASTER_POST_OP_OVERHEAD = 50_000n
/** The local TokenPaymaster refuses a price older than this (seconds): a year, since tests move the clock forward. */
const TOKEN_PAYMASTER_MAX_PRICE_AGE = 365n * 86_400n

export interface LocalNetworkDescription extends NetworkDescription {
  readonly paymaster: NonNullable<NetworkDescription["paymaster"]>
  readonly tokenPaymaster: NonNullable<NetworkDescription["tokenPaymaster"]>
  readonly marketplace: NonNullable<NetworkDescription["marketplace"]>
  readonly recovery: NonNullable<NetworkDescription["recovery"]>
  readonly spendGuard: NonNullable<NetworkDescription["spendGuard"]>
  readonly erc8004: NonNullable<NetworkDescription["erc8004"]>
  /** Funded with 10,000 ETH and the tokens' minter: for tests and the devnet faucet. */
  readonly deployerKey: Redacted.Redacted<Hex>
  readonly devKey: Redacted.Redacted<Hex>
}

export interface LocalNetworkOptions {
  /** anvil's chain id (default 31337). */
  readonly chainId?: number
  /** Alto's `--block-time` in ms (default 100: faster receipts on an automining anvil). */
  readonly bundlerBlockTimeMs?: number
  /** Where anvil and Alto listen (default `LOCAL_NETWORK_HOST`, else 127.0.0.1: loopback only). */
  readonly host?: string
  /** Echo child process output to this process's stderr (default false). */
  readonly verbose?: boolean
  /**
   * Append the bundler's output (its warnings, e.g. an operation it dropped) to
   * `<logDir>/alto-<chainId>.log`: the test run keeps it under `.test-results/`.
   */
  readonly logDir?: string
  /**
   * Keep the chain's state here across restarts (`<stateDir>/<chainId>/`: anvil's state and
   * the deployed addresses); none: a fresh chain every start (tests, the devnet script).
   */
  readonly stateDir?: string
}

const requireHere = createRequire(import.meta.url)
const anvilBinary = () =>
  path.join(path.dirname(requireHere.resolve("@foundry-rs/anvil-linux-amd64/package.json")), "bin", "anvil")
const altoCli = () => path.join(path.dirname(requireHere.resolve("@pimlico/alto")), "cli", "alto.js")
/** Makes Alto listen where anvil does (it has no option of its own for it): see the file. */
const loopbackOnly = path.join(import.meta.dirname, "loopback-only.cjs")

/** Where the local network's processes listen: `LOCAL_NETWORK_HOST`, by default loopback only. */
const LocalNetworkHost = Config.String("LOCAL_NETWORK_HOST").pipe(Config.withDefault("127.0.0.1"))

/** The address clients use for a listener on `host` (loopback when it listens everywhere). */
const reachableAt = (host: string) =>
  host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host

/**
 * A second anvil forking a running chain at its head (contracts, accounts and state
 * included), released with the enclosing scope: a chain of its own to rewind (reorg tests,
 * benchmarks) without touching the one it forks.
 */
export const startFork = (forkUrl: string, chainId: number = LOCAL_CHAIN_ID) =>
  Effect.gen(function*() {
    const { port } = yield* spawnOnFreePort(
      "anvil-fork",
      (port) =>
        spawnGuarded(
          "anvil-fork",
          anvilBinary(),
          ["--host", "127.0.0.1", "--port", String(port), "--fork-url", forkUrl, "--chain-id", String(chainId), "--silent"]
        ),
      (port, child) => waitReady(`anvil-fork ${chainId}`, `http://127.0.0.1:${port}`, "eth_chainId", child)
    )
    return { rpcUrl: `http://127.0.0.1:${port}` }
  })

/** Starts the whole network; every part is released with the enclosing scope. */
export const make = (options: LocalNetworkOptions = {}) =>
  Effect.gen(function*() {
    const verbose = options.verbose ?? false
    const host = options.host ?? (yield* Effect.orDie(LocalNetworkHost))
    const chainId = options.chainId ?? LOCAL_CHAIN_ID
    const stateDir = options.stateDir === undefined ? undefined : path.join(options.stateDir, String(chainId))
    const kept = stateDir === undefined ? Option.none() : yield* keptNetwork(stateDir)
    const urlOf = (port: number) => `http://${reachableAt(host)}:${port}`

    // With a state folder, anvil loads the chain kept there and writes it back on exit (and
    // every 5 s, should it be killed outright); writing a large state takes a while.
    const { port: anvilPort } = yield* spawnOnFreePort(
      `anvil ${chainId}`,
      (port) =>
        spawnGuarded(
          "anvil",
          anvilBinary(),
          [
            "--host", host, "--port", String(port), "--chain-id", String(chainId), "--silent",
            ...(stateDir === undefined ? [] : ["--state", stateFileOf(stateDir), "--state-interval", "5"])
          ],
          { verbose, stopGrace: Duration.seconds(stateDir === undefined ? 2 : 15) }
        ),
      (port, child) =>
        waitReady(`anvil ${chainId}`, urlOf(port), "eth_chainId", child).pipe(
          Effect.mapError((e) =>
            Option.isSome(kept) && child.exited()
              ? new LocalNetworkError({
                step: e.step,
                message: `${e.message}\nthe chain's kept state (${stateFileOf(stateDir!)}) could not be loaded: ` +
                  "LOCAL_CHAIN_STATE=fresh starts the local chains (and the embedded database) afresh",
                cause: e
              })
              : e
          )
        )
    )
    const rpcUrl = urlOf(anvilPort)

    /** Alto, against this chain: it deploys its simulation contracts with its own utility key (none when kept). */
    const startAlto = spawnOnFreePort(
      `alto ${chainId}`,
      (port) =>
        spawnGuarded(
          "alto",
          process.execPath,
          [
            "--require", loopbackOnly,
            altoCli(),
            "--das-listen-host", host,
            "--entrypoints", ENTRY_POINT_V07,
            "--executor-private-keys", ANVIL_KEYS.bundlerExecutor.toLowerCase(),
            "--utility-private-key", ANVIL_KEYS.bundlerUtility.toLowerCase(),
            "--rpc-url", rpcUrl,
            "--port", String(port),
            "--safe-mode", "false",
            "--block-time", String(options.bundlerBlockTimeMs ?? 100),
            "--utility-wallet-monitor", "false",
            "--log-level", verbose ? "info" : "warn"
          ],
          {
            verbose,
            ...(options.logDir === undefined ? {} : { logFile: path.join(options.logDir, `alto-${chainId}.log`) })
          }
        ),
      (port, child) => waitReady(`alto ${chainId}`, urlOf(port), "eth_supportedEntryPoints", child)
    )

    if (Option.isSome(kept)) {
      // The contracts are on the kept chain already: check that every one is, and deploy nothing.
      yield* verifyKept(rpcUrl, kept.value)
      const { port: altoPort } = yield* startAlto
      yield* Effect.logInfo(`chain ${chainId}: kept state loaded from ${stateDir}; contracts found, none deployed`)
      return {
        ...kept.value,
        rpcUrl,
        wsUrl: `ws://${reachableAt(host)}:${anvilPort}`,
        bundlerUrl: urlOf(altoPort)
      } satisfies LocalNetworkDescription
    }

    const chain = defineChain({
      id: chainId,
      name: "Local ERC-4337 network",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } }
    })
    const deployer = privateKeyToAccount(ANVIL_KEYS.deployer)
    const transport = http(rpcUrl)
    const publicClient = createPublicClient({ chain, transport, pollingInterval: 20 })
    const walletClient = createWalletClient({ chain, transport, account: deployer, pollingInterval: 20 })

    const step = <A>(name: string, f: () => Promise<A>) =>
      Effect.tryPromise({
        try: f,
        catch: (cause) => new LocalNetworkError({ step: name, message: cause instanceof Error ? cause.message : String(cause), cause })
      })

    // EntryPoint through the deterministic deployer, so that its SenderCreator is right.
    yield* step("entrypoint", async () => {
      const hash = await walletClient.sendTransaction({
        to: DETERMINISTIC_DEPLOYER,
        data: concat([ENTRY_POINT_SALT, entryPointArtifact.bytecode as Hex])
      })
      await publicClient.waitForTransactionReceipt({ hash })
      const code = await publicClient.getCode({ address: ENTRY_POINT_V07 })
      if (code === undefined || code === "0x") throw new Error("EntryPoint not at its canonical address")
    })

    // Alto deploys its simulation contracts with its own utility key: it can start now,
    // alongside our deployments from the deployer key.
    const altoReady = yield* startAlto.pipe(Effect.forkScoped)

    const delegation = yield* step("delegation framework", () =>
      deploySmartAccountsEnvironment(walletClient, publicClient, chain, { EntryPoint: ENTRY_POINT_V07 })
    )

    const deploy = (name: string, abi: Abi, bytecode: Hex, args: ReadonlyArray<unknown>) =>
      step(name, async () => {
        const hash = await walletClient.deployContract({ abi, bytecode, args: [...args] })
        const receipt = await publicClient.waitForTransactionReceipt({ hash })
        if (receipt.contractAddress == null) throw new Error(`${name}: no contract address`)
        return getAddress(receipt.contractAddress)
      })

    // The USD coin's permit accepts the smart account's ERC-1271 signature (USDC v2.2 does; TokenPaymaster.sol).
    const usdAddress = yield* deploy("token usd", permitStablecoinAbi, permitStablecoinBytecode, ["USD Coin", "USDC", 6])
    const usdtAddress = yield* deploy("token usdt", permitStablecoinAbi, permitStablecoinBytecode, ["Tether USD", "USDT", 6])

    const paymasterKey = generatePrivateKey()
    const paymasterAddress = yield* deploy(
      "paymaster",
      verifyingPaymasterArtifact.abi as Abi,
      verifyingPaymasterArtifact.bytecode as Hex,
      [ENTRY_POINT_V07, privateKeyToAccount(paymasterKey).address]
    )
    yield* step("paymaster deposit", async () => {
      const abi = verifyingPaymasterArtifact.abi as Abi
      const deposit = await walletClient.writeContract({ address: paymasterAddress, abi, functionName: "deposit", value: parseEther("100") })
      const stake = await walletClient.writeContract({ address: paymasterAddress, abi, functionName: "addStake", args: [86400], value: parseEther("1") })
      await publicClient.waitForTransactionReceipt({ hash: deposit })
      await publicClient.waitForTransactionReceipt({ hash: stake })
    })

    // Gas in the stablecoins at a fixed price: 3,000 tokens per ETH, +10 %, 50k gas for postOp's charge.
    const tokenPaymasterAddress = yield* deploy(
      "token paymaster",
      tokenPaymasterAbi as Abi,
      tokenPaymasterBytecode,
      [ENTRY_POINT_V07, deployer.address, TOKEN_PAYMASTER_MARKUP_BPS, TOKEN_PAYMASTER_POST_OP_OVERHEAD, TOKEN_PAYMASTER_MAX_PRICE_AGE]
    )
    yield* step("token paymaster setup", async () => {
      const address = tokenPaymasterAddress
      const abi = tokenPaymasterAbi
      const hashes = [
        await walletClient.writeContract({ address, abi, functionName: "setTokenPrice", args: [usdAddress, TOKENS_PER_ETH] }),
        await walletClient.writeContract({ address, abi, functionName: "setTokenPrice", args: [usdtAddress, TOKENS_PER_ETH] }),
        await walletClient.writeContract({ address, abi, functionName: "deposit", value: parseEther("100") }),
        await walletClient.writeContract({ address, abi, functionName: "addStake", args: [86400], value: parseEther("1") })
      ]
      for (const hash of hashes) {
        const receipt = await publicClient.waitForTransactionReceipt({ hash })
        if (receipt.status !== "success") throw new Error(`token paymaster setup: ${hash} reverted`)
      }
    })

    // Enforcers the kit's helper does not deploy: the framework's LogicalOrWrapperEnforcer (from
    // the bytecode @metamask/delegation-abis ships) and our own TransferCapEnforcer (Enforcers.sol).
    // Deployed last, so that every address above stays as docs/onchain.md lists it.
    const extraEnforcers = {
      LogicalOrWrapperEnforcer: yield* deploy(
        "LogicalOrWrapperEnforcer",
        logicalOrWrapperEnforcerAbi as Abi,
        logicalOrWrapperEnforcerBytecode as Hex,
        [delegation.DelegationManager]
      ),
      TransferCapEnforcer: yield* deploy("TransferCapEnforcer", transferCapEnforcerAbi as Abi, transferCapEnforcerBytecode, []),
      // Marketplace mandates cap approve/createJob/setBudget amounts per call and in total (Enforcers.sol).
      ArgumentCapEnforcer: yield* deploy("ArgumentCapEnforcer", argumentCapEnforcerAbi as Abi, argumentCapEnforcerBytecode, []),
      // Approvals above a threshold, m of n named approvers (Approvals.sol).
      ApprovalEnforcer: yield* deploy("ApprovalEnforcer", approvalEnforcerAbi as Abi, approvalEnforcerBytecode, [])
    }
    // The local agent-commerce (ACP) contract, so hiring runs end to end here (AgentCommerce.sol).
    const acpAddress = yield* deploy("agent commerce", agentCommerceAbi as Abi, agentCommerceBytecode, [])
    // The owner's own account (docs/account.md): the panic key's caveat and the guardians'
    // recovery contract, deployed after everything above so that no earlier address moves.
    const accountContracts = {
      PanicFreezeEnforcer: yield* deploy("PanicFreezeEnforcer", panicFreezeEnforcerAbi as Abi, panicFreezeEnforcerBytecode, [delegation.DelegationManager]),
      Recovery: yield* deploy("Recovery", recoveryAbi as Abi, recoveryBytecode, [delegation.DelegationManager])
    }
    // A grant's replacement checks the old grant's spend with it (SpendGuard.sol); last, so no earlier address moves.
    const spendGuardAddress = yield* deploy("SpendGuard", spendGuardAbi as Abi, spendGuardBytecode, [])
    // A basket budget across USD stablecoins (Basket.sol) and a DAI-like token of 18 decimals, so a
    // basket counts tokens of different decimals here; last, so no earlier address moves.
    const basketEnforcer = yield* deploy("BasketPeriodEnforcer", basketPeriodEnforcerAbi as Abi, basketPeriodEnforcerBytecode, [])
    const daiAddress = yield* deploy("token dai", permitStablecoinAbi, permitStablecoinBytecode, ["Dai Stablecoin", "DAI", 18])
    // ERC-8004's Identity and Reputation registries (vendored, src/chain/contracts/erc8004/) behind ERC-1967
    // proxies, the published way: a first implementation that names the owner, then the owner's upgrade to the
    // registry with its `initialize`. And the enforcer that holds a hire to a named agent. Last, so no earlier address moves.
    const erc8004 = yield* deployErc8004(deploy, step, walletClient, publicClient, deployer.address)
    const agentIdentityEnforcer = yield* deploy("AgentIdentityEnforcer", agentIdentityEnforcerAbi as Abi, agentIdentityEnforcerBytecode, [])

    const { port: altoPort } = yield* Fiber.join(altoReady)
    const bundlerUrl = urlOf(altoPort)

    const description: LocalNetworkDescription = {
      chainId,
      name: defaultChainName(chainId),
      rpcUrl,
      // anvil serves WebSocket on its HTTP port: new heads are pushed to the service's watcher.
      wsUrl: `ws://${reachableAt(host)}:${anvilPort}`,
      bundlerUrl,
      entryPoint: ENTRY_POINT_V07,
      delegation: checksummed({
        ...delegation,
        caveatEnforcers: {
          ...delegation.caveatEnforcers,
          ...extraEnforcers,
          PanicFreezeEnforcer: accountContracts.PanicFreezeEnforcer,
          BasketPeriodEnforcer: basketEnforcer,
          AgentIdentityEnforcer: agentIdentityEnforcer
        }
      }),
      tokens: {
        usd: { address: usdAddress, symbol: "USDC", name: "USD Coin", decimals: 6, permitVersion: "1" },
        usdt: { address: usdtAddress, symbol: "USDT", name: "Tether USD", decimals: 6, permitVersion: "1" },
        dai: { address: daiAddress, symbol: "DAI", name: "Dai Stablecoin", decimals: 18, permitVersion: "1" }
      },
      paymaster: { address: paymasterAddress, signerKey: Redacted.make(paymasterKey) },
      tokenPaymaster: { address: tokenPaymasterAddress },
      marketplace: { acp: acpAddress },
      recovery: { address: accountContracts.Recovery },
      spendGuard: { address: spendGuardAddress },
      erc8004,
      deployerKey: Redacted.make(ANVIL_KEYS.deployer),
      devKey: Redacted.make(ANVIL_KEYS.deployer)
    }
    if (stateDir !== undefined) yield* saveNetwork(stateDir, toJson(description))
    return description
  }).pipe(Effect.withSpan("LocalNetwork.start", { attributes: { chainId: options.chainId ?? LOCAL_CHAIN_ID } }))

/**
 * The two registries behind their proxies: `ERC1967Proxy(Erc8004Bootstrap, initialize(owner))`, then the owner's
 * `upgradeToAndCall(registry, initialize…)` (the registries' `initialize` is `reinitializer(2) onlyOwner`).
 */
const deployErc8004 = <E>(
  deploy: (name: string, abi: Abi, bytecode: Hex, args: ReadonlyArray<unknown>) => Effect.Effect<Address, E>,
  step: <A>(name: string, f: () => Promise<A>) => Effect.Effect<A, E>,
  walletClient: ReturnType<typeof createWalletClient>,
  publicClient: ReturnType<typeof createPublicClient>,
  owner: Address
) =>
  Effect.gen(function*() {
    const bootstrap = yield* deploy("ERC-8004 bootstrap", erc8004BootstrapAbi as Abi, erc8004BootstrapBytecode, [])
    const init = encodeFunctionData({ abi: erc8004BootstrapAbi, functionName: "initialize", args: [owner] })
    const proxy = (name: string) => deploy(name, eRC1967ProxyAbi as Abi, eRC1967ProxyBytecode, [bootstrap, init])
    const identityImpl = yield* deploy("IdentityRegistry implementation", identityRegistryUpgradeableAbi as Abi, identityRegistryUpgradeableBytecode, [])
    const reputationImpl = yield* deploy("ReputationRegistry implementation", reputationRegistryUpgradeableAbi as Abi, reputationRegistryUpgradeableBytecode, [])
    const identityRegistry = yield* proxy("IdentityRegistry proxy")
    const reputationRegistry = yield* proxy("ReputationRegistry proxy")
    const upgrade = (name: string, proxyAddress: Address, implementation: Address, data: Hex) =>
      step(name, async () => {
        const hash = await walletClient.writeContract({
          chain: walletClient.chain,
          account: walletClient.account!,
          address: proxyAddress,
          abi: erc8004BootstrapAbi,
          functionName: "upgradeToAndCall",
          args: [implementation, data]
        })
        const receipt = await publicClient.waitForTransactionReceipt({ hash })
        if (receipt.status !== "success") throw new Error(`${name}: ${hash} reverted`)
      })
    yield* upgrade(
      "IdentityRegistry upgrade",
      identityRegistry,
      identityImpl,
      encodeFunctionData({ abi: identityRegistryUpgradeableAbi, functionName: "initialize", args: [] })
    )
    yield* upgrade(
      "ReputationRegistry upgrade",
      reputationRegistry,
      reputationImpl,
      encodeFunctionData({ abi: reputationRegistryUpgradeableAbi, functionName: "initialize", args: [identityRegistry] })
    )
    return { identityRegistry, reputationRegistry }
  })

/** The kit returns lowercase addresses; everything here is EIP-55 checksummed. */
const checksummed = (env: {
  DelegationManager: Hex
  EntryPoint: Hex
  SimpleFactory: Hex
  implementations: Record<string, Hex>
  caveatEnforcers: Record<string, Hex>
}): DelegationEnvironment => {
  const map = (r: Record<string, Hex>) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, getAddress(v)]))
  return {
    DelegationManager: getAddress(env.DelegationManager),
    EntryPoint: getAddress(env.EntryPoint),
    SimpleFactory: getAddress(env.SimpleFactory),
    implementations: map(env.implementations),
    caveatEnforcers: map(env.caveatEnforcers)
  }
}

/** One local network started on its own (tests and scripts that need a chain of their own). */
export class LocalNetwork extends Context.Service<LocalNetwork, LocalNetworkDescription>()("app/chain/LocalNetwork") {
  static readonly layerWith = (options: LocalNetworkOptions) => Layer.effect(LocalNetwork, make(options))
  static readonly layer = LocalNetwork.layerWith({})
  /** `Network` from a local network started for it (LocalNetwork stays available too). */
  static readonly layerNetwork = Layer.effect(Network, LocalNetwork.useSync((d): NetworkDescription => d)).pipe(
    Layer.provideMerge(LocalNetwork.layer)
  )
}

/** The local networks this process started (the default run: `LOCAL_CHAIN_IDS`), the primary first. */
export class LocalNetworks extends Context.Service<LocalNetworks, ReadonlyArray<LocalNetworkDescription>>()(
  "app/chain/LocalNetworks"
) {
  /** Starts one network per chain id, side by side; all stop with the layer's scope. */
  static readonly layerWith = (chainIds: ReadonlyArray<number>, options: Omit<LocalNetworkOptions, "chainId"> = {}) =>
    Layer.effect(LocalNetworks, startAll(chainIds, options))
}

/** Starts local networks for these chain ids at once (each its own anvil and Alto). */
export const startAll = (chainIds: ReadonlyArray<number>, options: Omit<LocalNetworkOptions, "chainId"> = {}) =>
  Effect.forEach(chainIds, (chainId) => make({ ...options, chainId }), { concurrency: "unbounded" })

/** The description as plain JSON (secrets revealed): for humans and the devnet script. */
export const toJson = (d: LocalNetworkDescription) => ({
  chainId: d.chainId,
  name: d.name,
  rpcUrl: d.rpcUrl,
  ...(d.wsUrl === undefined ? {} : { wsUrl: d.wsUrl }),
  bundlerUrl: d.bundlerUrl,
  entryPoint: d.entryPoint,
  delegation: d.delegation,
  tokens: d.tokens,
  paymaster: { address: d.paymaster.address, signerKey: Redacted.value(d.paymaster.signerKey) },
  tokenPaymaster: d.tokenPaymaster,
  marketplace: d.marketplace,
  recovery: d.recovery,
  spendGuard: d.spendGuard,
  erc8004: d.erc8004,
  deployerKey: Redacted.value(d.deployerKey)
})
export type LocalNetworkJson = ReturnType<typeof toJson>

/** Back from `toJson` (tests receive the run's networks as JSON). */
export const fromJson = (json: LocalNetworkJson): LocalNetworkDescription => ({
  ...json,
  paymaster: { address: json.paymaster.address, signerKey: Redacted.make(json.paymaster.signerKey) },
  deployerKey: Redacted.make(json.deployerKey),
  devKey: Redacted.make(json.deployerKey)
})

/**
 * The configuration a service process needs to serve these networks as configured ones:
 * `CHAINS` (a JSON list) and each chain's `CHAIN_<id>_PAYMASTER_SIGNER_KEY`.
 */
export const configEnvOf = (nets: LocalNetworkJson | ReadonlyArray<LocalNetworkJson>): Record<string, string> => {
  const list = Array.isArray(nets) ? nets as ReadonlyArray<LocalNetworkJson> : [nets as LocalNetworkJson]
  const chains = list.map((net) => ({
    chainId: net.chainId,
    name: net.name,
    rpcUrl: net.rpcUrl,
    ...(net.wsUrl === undefined ? {} : { wsUrl: net.wsUrl }),
    bundlerUrl: net.bundlerUrl,
    entryPoint: net.entryPoint,
    delegationEnvironment: net.delegation,
    tokens: net.tokens,
    paymaster: net.paymaster.address,
    ...(net.tokenPaymaster === undefined ? {} : { tokenPaymaster: net.tokenPaymaster.address }),
    ...(net.marketplace === undefined ? {} : { acp: net.marketplace.acp }),
    ...(net.recovery === undefined ? {} : { recovery: net.recovery.address }),
    ...(net.spendGuard === undefined ? {} : { spendGuard: net.spendGuard.address }),
    ...(net.erc8004 === undefined ? {} : { erc8004: net.erc8004 })
  }))
  return {
    CHAINS: JSON.stringify(chains),
    ...Object.fromEntries(list.map((net) => [`CHAIN_${net.chainId}_PAYMASTER_SIGNER_KEY`, net.paymaster.signerKey]))
  }
}
