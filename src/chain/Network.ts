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

export interface NetworkDescription {
  readonly chainId: number
  readonly rpcUrl: string
  readonly bundlerUrl: string
  readonly entryPoint: Address
  readonly delegation: DelegationEnvironment
  /** `usd`: the USD stablecoin with permit; `usdt`: the second stablecoin (approval path). */
  readonly tokens: { readonly usd: TokenInfo; readonly usdt: TokenInfo }
  readonly paymaster: PaymasterInfo | undefined
  /** Absent: gas in stablecoins is not offered (`gasToken` builds answer 503). */
  readonly tokenPaymaster?: TokenPaymasterInfo | undefined
  /** The agent-commerce (ACP) contract the local network deploys; a configured network names it with `MARKETPLACE_ACP_CONTRACT`. */
  readonly marketplace?: { readonly acp: Address } | undefined
  /** The guardians-and-recovery contract (Recovery.sol); a configured network names it with `RECOVERY_ADDRESS`. Absent: no guardians. */
  readonly recovery?: { readonly address: Address } | undefined
}

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
 * A real network from configuration:
 * CHAIN_ID, CHAIN_RPC_URL, BUNDLER_URL, ENTRY_POINT (default: canonical v0.7),
 * DELEGATION_ENVIRONMENT (JSON, default: the kit's public deployment for CHAIN_ID),
 * TOKEN_USD_ADDRESS / _SYMBOL / _NAME / _DECIMALS / _PERMIT_VERSION, the same for TOKEN_USDT,
 * PAYMASTER_ADDRESS with PAYMASTER_SIGNER_KEY (redacted; both or neither),
 * TOKEN_PAYMASTER_ADDRESS (optional: a TokenPaymaster.sol accepting the two tokens),
 * RECOVERY_ADDRESS (optional: a Recovery.sol over this DelegationManager).
 */
export const networkConfig: Config.Config<NetworkDescription> = Config.all({
  chainId: Config.Int("CHAIN_ID"),
  rpcUrl: Config.String("CHAIN_RPC_URL"),
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
  recoveryAddress: AddressConfig("RECOVERY_ADDRESS").pipe(Config.option)
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
      rpcUrl: c.rpcUrl,
      bundlerUrl: c.bundlerUrl,
      entryPoint: c.entryPoint,
      delegation,
      tokens: { usd: c.usd, usdt: c.usdt },
      paymaster,
      tokenPaymaster: Option.isSome(c.tokenPaymasterAddress) ? { address: c.tokenPaymasterAddress.value } : undefined,
      recovery: Option.isSome(c.recoveryAddress) ? { address: c.recoveryAddress.value } : undefined
    }
  })
)

/** The network in use, whichever way it was described. */
export class Network extends Context.Service<Network, NetworkDescription>()("app/chain/Network") {
  /** From configuration (a real network). */
  static readonly layerConfig = Layer.effect(Network, Effect.gen(function*() {
    return yield* networkConfig
  }))
  static readonly layer = (description: NetworkDescription) => Layer.succeed(Network, description)
}
