/**
 * The launchpad's chains: the contract's names beside the upstream's names and ids.
 * One table, so a new chain is one row (see docs/launchpad.md for the evidence behind each value).
 */
import type { LaunchpadChain } from "./Api.ts"

export interface ChainInfo {
  readonly chain: LaunchpadChain
  /** `filters[chain]` / `chain` value of the token API. */
  readonly upstream: string
  /** `chainId` on the wire. Solana has no EVM id; 101 is its mainnet-beta id in the SPL token-list convention. */
  readonly chainId: number
  /** `chainID` of vp-api klines: the SDK's `KLINE_CHAIN_ID` (BASE 0, SOLANA 1); ROBINHOOD has none there, 2 is assumed. */
  readonly klineChainId: number
  readonly addressKind: "evm" | "solana"
}

export const chains: ReadonlyArray<ChainInfo> = [
  { chain: "base", upstream: "BASE", chainId: 8453, klineChainId: 0, addressKind: "evm" },
  { chain: "solana", upstream: "SOLANA", chainId: 101, klineChainId: 1, addressKind: "solana" },
  { chain: "robinhood", upstream: "ROBINHOOD", chainId: 4663, klineChainId: 2, addressKind: "evm" }
]

export const chainInfo = (chain: LaunchpadChain): ChainInfo => chains.find((c) => c.chain === chain)!

export const chainOfUpstream = (upstream: string): ChainInfo | undefined => chains.find((c) => c.upstream === upstream)

/** Order used to break ties across chains in merged lists: the contract names, alphabetically. */
export const chainRank = (chain: LaunchpadChain): number => (chain === "base" ? 0 : chain === "robinhood" ? 1 : 2)

const evmAddress = /^0x[0-9a-fA-F]{40}$/
// Base58 (no 0, O, I, l), 32..44 characters: a Solana public key.
const solanaAddress = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/

export const isValidAddress = (info: ChainInfo, address: string): boolean =>
  info.addressKind === "evm" ? evmAddress.test(address) : solanaAddress.test(address)

/** EVM addresses compare case-insensitively; Solana's base58 is case-sensitive. */
export const sameAddress = (info: ChainInfo, a: string, b: string): boolean =>
  info.addressKind === "evm" ? a.toLowerCase() === b.toLowerCase() : a === b
