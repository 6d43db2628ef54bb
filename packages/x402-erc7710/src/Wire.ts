/**
 * The x402 v2 wire as the ERC-7710 asset-transfer method uses it (coinbase/x402
 * `specs/schemes/exact/scheme_exact_evm.md` §3, `specs/transports-v2/http.md`): the names,
 * the CAIP-2 network id, and the scheme payload the client puts in `PAYMENT-SIGNATURE`.
 * docs/payments.md, "The standard as implemented", walks through the whole exchange.
 */
import { Schema } from "effect"
import type { Address, Hex } from "viem"

const AddressSchema = Schema.String.check(
  Schema.isPattern(/^0x[0-9a-fA-F]{40}$/, { description: "0x followed by 40 hex characters" })
)
const HexString = Schema.String.check(Schema.isPattern(/^0x([0-9a-fA-F]{2})*$/, { description: "0x-prefixed hex bytes" }))

/**
 * The MetaMask Delegation Framework's addresses on a chain (the kit's `SmartAccountsEnvironment`):
 * the DelegationManager that redeems payments and the caveat enforcers their terms name.
 */
export interface DelegationEnvironment {
  readonly DelegationManager: Address
  readonly EntryPoint: Address
  readonly SimpleFactory: Address
  readonly implementations: Readonly<Record<string, Address>>
  readonly caveatEnforcers: Readonly<Record<string, Address>>
}

export const X402_VERSION = 2

/** `PaymentRequirements.extra.assetTransferMethod` of the delegation method (required for it by the spec). */
export const ERC7710 = "erc7710"

/** The schemes this mechanism pays and settles: `exact`, and `upto` (settles at most the signed ceiling). */
export const SCHEMES = ["exact", "upto"] as const
export type PaymentScheme = typeof SCHEMES[number]
export const isPaymentScheme = (s: unknown): s is PaymentScheme => s === "exact" || s === "upto"

/** The three HTTP headers of the v2 transport (base64 of JSON each). */
export const HEADERS = {
  required: "PAYMENT-REQUIRED",
  signature: "PAYMENT-SIGNATURE",
  response: "PAYMENT-RESPONSE"
} as const

export type Network = `${string}:${string}`

/** CAIP-2 id of an EVM chain. */
export const networkOf = (chainId: number): Network => `eip155:${chainId}`

/** The chain id of a CAIP-2 `eip155:<id>` network, strictly (no sign, no leading zero, no padding). */
export const chainIdOf = (network: unknown): number | undefined => {
  if (typeof network !== "string") return undefined
  const m = /^eip155:([1-9][0-9]{0,15})$/.exec(network)
  if (m === null) return undefined
  const id = Number(m[1])
  return Number.isSafeInteger(id) ? id : undefined
}

/**
 * `PaymentPayload.payload` of the ERC-7710 method (spec §3 Phase 2): the DelegationManager,
 * the permission context it redeems (here the DF delegation chain, leaf first, ABI-encoded)
 * and the account that pays (the chain's root delegator).
 */
export const Erc7710Payload = Schema.Struct({
  delegationManager: AddressSchema,
  permissionContext: HexString,
  delegator: AddressSchema
})
export interface Erc7710Payload {
  readonly delegationManager: Address
  readonly permissionContext: Hex
  readonly delegator: Address
}

/** What the facilitator announces in `/supported` `kinds[].extra`, and the resource server copies into `extra`. */
export interface FacilitatorExtra {
  /** The address the payment delegation must name as its delegate: the facilitator's settlement key. */
  readonly facilitatorAddress: Address
  readonly delegationManager: Address
}

/** uint256 bounds, for amounts read off the wire. */
export const MAX_UINT256 = (1n << 256n) - 1n
