/**
 * What the service needs to know about the ERC-4337 network it talks to: RPC and
 * bundler endpoints, chain id, EntryPoint, the Delegation Framework addresses, the
 * stablecoins and the sponsoring paymaster. Provided either from configuration (a real
 * network) or from a running `LocalNetwork` (see `LocalNetwork.ts`).
 */
import { getSmartAccountsEnvironment } from "@metamask/smart-accounts-kit"
import { Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { Address, Hex } from "viem"
import { Address as AddressSchema } from "../domain/Primitives.ts"

/** EntryPoint v0.7 at its canonical (CREATE2 via the deterministic deployer) address. */
export const ENTRY_POINT_V07: Address = "0x0000000071727De22E5E9d8BAf0edAc6f37da032"

/** The MetaMask Delegation Framework addresses (the kit's `SmartAccountsEnvironment`). */
export interface DelegationEnvironment {
  readonly DelegationManager: Address
  readonly EntryPoint: Address
  readonly SimpleFactory: Address
  readonly implementations: Readonly<Record<string, Address>>
  readonly caveatEnforcers: Readonly<Record<string, Address>>
}

export interface TokenInfo {
  readonly address: Address
  readonly symbol: string
  readonly name: string
  readonly decimals: number
  /** EIP-712 domain version of the token's EIP-2612 permit; absent when it has no permit. */
  readonly permitVersion?: string
}

export interface PaymasterInfo {
  /** A VerifyingPaymaster (EntryPoint v0.7 sample): sponsors what its signer signs. */
  readonly address: Address
  readonly signerKey: Redacted.Redacted<Hex>
}

/** The ERC-20 token paymaster (TokenPaymaster.sol): gas paid in the stablecoins, permit (usd) or allowance (usdt). */
export interface TokenPaymasterInfo {
  readonly address: Address
}

/** ERC-8004 "Trustless Agents": where agents are named (Identity) and rated (Reputation). docs/onchain.md. */
export interface Erc8004Registries {
  readonly identityRegistry: Address
  readonly reputationRegistry: Address
}

export interface NetworkDescription {
  readonly chainId: number
  /** Display name (`Base`, `Local devnet`, ...): the Delegation's `chain`, audit entries, errors. */
  readonly name: string
  readonly rpcUrl: string
  /**
   * The node's WebSocket endpoint, when it has one: new heads are pushed (`eth_subscribe`)
   * rather than polled where the service waits for a block (src/chain/Heads.ts). Reads stay on `rpcUrl`.
   */
  readonly wsUrl?: string | undefined
  readonly bundlerUrl: string
  readonly entryPoint: Address
  readonly delegation: DelegationEnvironment
  /**
   * `usd`: the USD stablecoin with permit; `usdt`: the second stablecoin (approval path); `dai`
   * (optional): a USD stablecoin of 18 decimals, so a basket budget counts tokens of different decimals.
   */
  readonly tokens: { readonly usd: TokenInfo; readonly usdt: TokenInfo; readonly dai?: TokenInfo | undefined }
  readonly paymaster: PaymasterInfo | undefined
  /** Absent: gas in stablecoins is not offered (`gasToken` builds answer 503). */
  readonly tokenPaymaster?: TokenPaymasterInfo | undefined
  /** The agent-commerce (ACP) contract the local network deploys; a configured network names it with `MARKETPLACE_ACP_CONTRACT`. */
  readonly marketplace?: { readonly acp: Address } | undefined
  /**
   * The ERC-8004 Identity and Reputation registries (proxies) the local network deploys; a configured network names
   * them with `ERC8004_IDENTITY_REGISTRY` / `ERC8004_REPUTATION_REGISTRY` (both or neither). Absent: no agent is named.
   */
  readonly erc8004?: Erc8004Registries | undefined
  /** The key that sends audit anchors on this chain (`CHAIN_<id>_ANCHOR_PRIVATE_KEY`, or the local network's dev key). */
  readonly anchorKey?: Redacted.Redacted<Hex> | undefined
  /** A funded key of a local network (tests, the devnet faucet); never set for a configured network. */
  readonly devKey?: Redacted.Redacted<Hex> | undefined
  /** The guardians-and-recovery contract (Recovery.sol); a configured network names it with `RECOVERY_ADDRESS`. Absent: no guardians. */
  readonly recovery?: { readonly address: Address } | undefined
  /** The SpendGuard contract (SpendGuard.sol) a grant's replacement checks the old grant's spend with; `SPEND_GUARD_ADDRESS`. Absent: grants cannot be replaced. */
  readonly spendGuard?: { readonly address: Address } | undefined
}

/** Every stablecoin a network names (`dai` only where it has one). */
export const networkTokens = (tokens: NetworkDescription["tokens"]): ReadonlyArray<TokenInfo> =>
  [tokens.usd, tokens.usdt, ...(tokens.dai === undefined ? [] : [tokens.dai])]

/** Names of well-known chains; any other is `Chain <id>` unless its configuration names it. */
const KNOWN_CHAIN_NAMES: Readonly<Record<number, string>> = {
  1: "Ethereum",
  10: "Optimism",
  137: "Polygon",
  8453: "Base",
  42161: "Arbitrum One",
  84532: "Base Sepolia",
  11155111: "Sepolia",
  31337: "Local devnet",
  31338: "Local devnet B"
}

export const defaultChainName = (chainId: number): string => KNOWN_CHAIN_NAMES[chainId] ?? `Chain ${chainId}`

const AddressConfig = (name: string) =>
  Config.schema(AddressSchema, name).pipe(Config.map((s) => s as Address))

const HexConfig = (name: string) => Config.Redacted(name)

const DelegationEnvironmentSchema = Schema.Struct({
  DelegationManager: Schema.String,
  EntryPoint: Schema.String,
  SimpleFactory: Schema.String,
  implementations: Schema.Record(Schema.String, Schema.String),
  caveatEnforcers: Schema.Record(Schema.String, Schema.String)
})

const tokenConfig = (prefix: string, defaults: { symbol: string; name: string }) =>
  Config.all({
    address: AddressConfig(`${prefix}_ADDRESS`),
    symbol: Config.String(`${prefix}_SYMBOL`).pipe(Config.withDefault(defaults.symbol)),
    name: Config.String(`${prefix}_NAME`).pipe(Config.withDefault(defaults.name)),
    decimals: Config.Int(`${prefix}_DECIMALS`).pipe(Config.withDefault(6)),
    permitVersion: Config.String(`${prefix}_PERMIT_VERSION`).pipe(Config.option)
  }).pipe(
    Config.map(({ permitVersion, ...rest }): TokenInfo =>
      Option.isSome(permitVersion) ? { ...rest, permitVersion: permitVersion.value } : rest
    )
  )

/**
 * One real network from the single-network keys (kept for deployments that serve one chain):
 * CHAIN_ID, CHAIN_RPC_URL, BUNDLER_URL, CHAIN_NAME, ENTRY_POINT (default: canonical v0.7),
 * DELEGATION_ENVIRONMENT (JSON, default: the kit's public deployment for CHAIN_ID),
 * TOKEN_USD_ADDRESS / _SYMBOL / _NAME / _DECIMALS / _PERMIT_VERSION, the same for TOKEN_USDT,
 * PAYMASTER_ADDRESS with PAYMASTER_SIGNER_KEY (redacted; both or neither),
 * TOKEN_PAYMASTER_ADDRESS (optional: a TokenPaymaster.sol accepting the two tokens),
 * MARKETPLACE_ACP_CONTRACT (optional), ANCHOR_PRIVATE_KEY (optional),
 * RECOVERY_ADDRESS (optional: a Recovery.sol over this DelegationManager),
 * ERC8004_IDENTITY_REGISTRY with ERC8004_REPUTATION_REGISTRY (optional: the ERC-8004 registries).
 */
export const networkConfig: Config.Config<NetworkDescription> = Config.all({
  chainId: Config.Int("CHAIN_ID"),
  name: Config.String("CHAIN_NAME").pipe(Config.option),
  rpcUrl: Config.String("CHAIN_RPC_URL"),
  wsUrl: Config.String("CHAIN_WS_URL").pipe(Config.option),
  bundlerUrl: Config.String("BUNDLER_URL"),
  entryPoint: AddressConfig("ENTRY_POINT").pipe(Config.withDefault(ENTRY_POINT_V07)),
  delegationJson: Config.schema(Schema.fromJsonString(DelegationEnvironmentSchema), "DELEGATION_ENVIRONMENT").pipe(
    Config.option
  ),
  usd: tokenConfig("TOKEN_USD", { symbol: "USDC", name: "USD Coin" }),
  usdt: tokenConfig("TOKEN_USDT", { symbol: "USDT", name: "Tether USD" }),
  paymasterAddress: AddressConfig("PAYMASTER_ADDRESS").pipe(Config.option),
  paymasterKey: HexConfig("PAYMASTER_SIGNER_KEY").pipe(Config.option),
  tokenPaymasterAddress: AddressConfig("TOKEN_PAYMASTER_ADDRESS").pipe(Config.option),
  acp: AddressConfig("MARKETPLACE_ACP_CONTRACT").pipe(Config.option),
  anchorKey: HexConfig("ANCHOR_PRIVATE_KEY").pipe(Config.option),
  recoveryAddress: AddressConfig("RECOVERY_ADDRESS").pipe(Config.option),
  spendGuardAddress: AddressConfig("SPEND_GUARD_ADDRESS").pipe(Config.option),
  identityRegistry: AddressConfig("ERC8004_IDENTITY_REGISTRY").pipe(Config.option),
  reputationRegistry: AddressConfig("ERC8004_REPUTATION_REGISTRY").pipe(Config.option)
}).pipe(
  Config.map((c): NetworkDescription => {
    const delegation: DelegationEnvironment = Option.isSome(c.delegationJson)
      ? (c.delegationJson.value as DelegationEnvironment)
      : (getSmartAccountsEnvironment(c.chainId) as DelegationEnvironment)
    const paymaster: PaymasterInfo | undefined =
      Option.isSome(c.paymasterAddress) && Option.isSome(c.paymasterKey)
        ? { address: c.paymasterAddress.value, signerKey: c.paymasterKey.value as Redacted.Redacted<Hex> }
        : undefined
    return {
      chainId: c.chainId,
      name: Option.getOrElse(c.name, () => defaultChainName(c.chainId)),
      rpcUrl: c.rpcUrl,
      ...(Option.isSome(c.wsUrl) ? { wsUrl: c.wsUrl.value } : {}),
      bundlerUrl: c.bundlerUrl,
      entryPoint: c.entryPoint,
      delegation,
      tokens: { usd: c.usd, usdt: c.usdt },
      paymaster,
      tokenPaymaster: Option.isSome(c.tokenPaymasterAddress) ? { address: c.tokenPaymasterAddress.value } : undefined,
      marketplace: Option.isSome(c.acp) ? { acp: c.acp.value } : undefined,
      anchorKey: Option.getOrUndefined(c.anchorKey) as Redacted.Redacted<Hex> | undefined,
      recovery: Option.isSome(c.recoveryAddress) ? { address: c.recoveryAddress.value } : undefined,
      spendGuard: Option.isSome(c.spendGuardAddress) ? { address: c.spendGuardAddress.value } : undefined,
      erc8004: Option.isSome(c.identityRegistry) && Option.isSome(c.reputationRegistry)
        ? { identityRegistry: c.identityRegistry.value, reputationRegistry: c.reputationRegistry.value }
        : undefined
    }
  })
)

const TokenJson = Schema.Struct({
  address: AddressSchema,
  symbol: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  decimals: Schema.optionalKey(Schema.Int),
  permitVersion: Schema.optionalKey(Schema.String)
})

/** One entry of `CHAINS` (secrets are never in it: see `configuredNetworks`). */
export const ChainJson = Schema.Struct({
  chainId: Schema.Int.check(Schema.isGreaterThan(0)),
  name: Schema.optionalKey(Schema.String),
  rpcUrl: Schema.String,
  wsUrl: Schema.optionalKey(Schema.String),
  bundlerUrl: Schema.String,
  entryPoint: Schema.optionalKey(AddressSchema),
  delegationEnvironment: Schema.optionalKey(DelegationEnvironmentSchema),
  tokens: Schema.Struct({ usd: TokenJson, usdt: TokenJson, dai: Schema.optionalKey(TokenJson) }),
  paymaster: Schema.optionalKey(AddressSchema),
  tokenPaymaster: Schema.optionalKey(AddressSchema),
  acp: Schema.optionalKey(AddressSchema),
  recovery: Schema.optionalKey(AddressSchema),
  spendGuard: Schema.optionalKey(AddressSchema),
  erc8004: Schema.optionalKey(Schema.Struct({ identityRegistry: AddressSchema, reputationRegistry: AddressSchema }))
})
export type ChainJson = typeof ChainJson.Type

/** At least one network, each chain id once. */
export const ChainsJson = Schema.Array(ChainJson).check(
  Schema.makeFilter((list) => {
    if (list.length === 0) return "CHAINS must name at least one network"
    const ids = list.map((c) => c.chainId)
    const twice = ids.find((id, i) => ids.indexOf(id) !== i)
    return twice === undefined ? undefined : `CHAINS names chain ${twice} twice`
  })
)

const tokenOf = (t: typeof TokenJson.Type, defaults: { symbol: string; name: string }): TokenInfo => ({
  address: t.address as Address,
  symbol: t.symbol ?? defaults.symbol,
  name: t.name ?? defaults.name,
  decimals: t.decimals ?? 6,
  ...(t.permitVersion === undefined ? {} : { permitVersion: t.permitVersion })
})

/**
 * The networks this service serves, from configuration; `None` when none is configured (the
 * process then starts local networks). `CHAINS` is a JSON array of `ChainJson`; each chain's
 * secrets come from `CHAIN_<chainId>_PAYMASTER_SIGNER_KEY` and `CHAIN_<chainId>_ANCHOR_PRIVATE_KEY`.
 * Without `CHAINS`, the single-network keys (`CHAIN_RPC_URL`, ... : `networkConfig`) describe one.
 * The first network listed is the primary one (the default where a request names no chain).
 */
export const configuredNetworks: Effect.Effect<Option.Option<ReadonlyArray<NetworkDescription>>, Config.ConfigError> =
  Effect.gen(function*() {
    const list = yield* Config.option(Config.schema(Schema.fromJsonString(ChainsJson), "CHAINS"))
    if (Option.isNone(list)) {
      const single = yield* Config.option(Config.String("CHAIN_RPC_URL"))
      return Option.isNone(single) ? Option.none() : Option.some([yield* networkConfig])
    }
    const anchorKeyForAll = yield* Config.option(HexConfig("ANCHOR_PRIVATE_KEY"))
    const networks: Array<NetworkDescription> = []
    for (const c of list.value) {
      const paymasterKey = yield* Config.option(HexConfig(`CHAIN_${c.chainId}_PAYMASTER_SIGNER_KEY`))
      const anchorKey = Option.orElse(yield* Config.option(HexConfig(`CHAIN_${c.chainId}_ANCHOR_PRIVATE_KEY`)), () => anchorKeyForAll)
      networks.push({
        chainId: c.chainId,
        name: c.name ?? defaultChainName(c.chainId),
        rpcUrl: c.rpcUrl,
        ...(c.wsUrl === undefined ? {} : { wsUrl: c.wsUrl }),
        bundlerUrl: c.bundlerUrl,
        entryPoint: (c.entryPoint ?? ENTRY_POINT_V07) as Address,
        delegation: (c.delegationEnvironment ?? getSmartAccountsEnvironment(c.chainId)) as DelegationEnvironment,
        tokens: {
          usd: tokenOf(c.tokens.usd, { symbol: "USDC", name: "USD Coin" }),
          usdt: tokenOf(c.tokens.usdt, { symbol: "USDT", name: "Tether USD" }),
          ...(c.tokens.dai === undefined ? {} : { dai: { ...tokenOf(c.tokens.dai, { symbol: "DAI", name: "Dai Stablecoin" }), decimals: c.tokens.dai.decimals ?? 18 } })
        },
        paymaster: c.paymaster !== undefined && Option.isSome(paymasterKey)
          ? { address: c.paymaster as Address, signerKey: paymasterKey.value as Redacted.Redacted<Hex> }
          : undefined,
        tokenPaymaster: c.tokenPaymaster === undefined ? undefined : { address: c.tokenPaymaster as Address },
        marketplace: c.acp === undefined ? undefined : { acp: c.acp as Address },
        recovery: c.recovery === undefined ? undefined : { address: c.recovery as Address },
        spendGuard: c.spendGuard === undefined ? undefined : { address: c.spendGuard as Address },
        erc8004: c.erc8004 === undefined
          ? undefined
          : { identityRegistry: c.erc8004.identityRegistry as Address, reputationRegistry: c.erc8004.reputationRegistry as Address },
        anchorKey: Option.getOrUndefined(anchorKey) as Redacted.Redacted<Hex> | undefined
      })
    }
    return Option.some(networks)
  })

/** The network in use, whichever way it was described. */
export class Network extends Context.Service<Network, NetworkDescription>()("app/chain/Network") {
  /** From configuration (a real network). */
  static readonly layerConfig = Layer.effect(Network, Effect.gen(function*() {
    return yield* networkConfig
  }))
  static readonly layer = (description: NetworkDescription) => Layer.succeed(Network, description)
}
