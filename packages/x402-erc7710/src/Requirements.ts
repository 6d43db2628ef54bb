/**
 * What a paying client checks in a server's `PAYMENT-REQUIRED` before it signs anything.
 * Everything in it is hostile input: a 402 comes from whatever server the agent called, and
 * the header is base64 JSON that `@x402/core` parses without a schema. Each check names the
 * field and says why, so an agent (and later the service's decline) can say what was wrong.
 */
import { type Address, getAddress, isAddress, zeroAddress } from "viem"
import { chainIdOf, ERC7710, isPaymentScheme, MAX_UINT256, type PaymentScheme, X402_VERSION } from "./Wire.ts"

/** A refusal to pay: the field at fault and why. Thrown (or returned) before anything is signed. */
export class PaymentRefused extends Error {
  override readonly name = "PaymentRefused"
  constructor(readonly field: string, readonly reason: string) {
    super(`${field}: ${reason}`)
  }
}

export interface PayableAsset {
  readonly address: Address
  readonly decimals: number
  readonly symbol?: string
}

/** What the client can pay with: one chain, the grant's tokens. */
export interface PayerScope {
  readonly chainId: number
  readonly assets: ReadonlyArray<PayableAsset>
}

/** A requirement that passed every check, in typed form. */
export interface CheckedRequirement {
  readonly scheme: PaymentScheme
  readonly chainId: number
  readonly asset: Address
  readonly payTo: Address
  /** `exact`: the amount to transfer; `upto`: the ceiling the delegation allows. */
  readonly amount: bigint
  readonly maxTimeoutSeconds: number
  /** The delegate of the payment delegation: the facilitator's settlement address. */
  readonly facilitator: Address
}

export type Checked<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly refused: PaymentRefused }

const refuse = <A>(field: string, reason: string): Checked<A> => ({ ok: false, refused: new PaymentRefused(field, reason) })
const ok = <A>(value: A): Checked<A> => ({ ok: true, value })

/** A payment may be outstanding at most this long (a signed, unsettled payment is spendable until then). */
export const MAX_TIMEOUT_SECONDS = 3_600
/** Longest resource URL recorded (the owner's log keeps it). */
export const MAX_URL_LENGTH = 2_048
const MAX_TEXT_LENGTH = 1_024

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The first control character (NUL included) in `s`, as "NUL at 12" / "U+001B at 3". */
const controlCharacter = (s: string): string | undefined => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x7f) return `${c === 0 ? "NUL" : `U+${c.toString(16).toUpperCase().padStart(4, "0")}`} at position ${i}`
  }
  return undefined
}

/** A strict 20-byte address: 0x + 40 hex; mixed case must be a valid EIP-55 checksum; never the zero address. */
const checkAddress = (field: string, value: unknown): Checked<Address> => {
  if (typeof value !== "string") return refuse(field, "must be a 0x-prefixed 20-byte address string")
  if (!/^0x[0-9a-fA-F]*$/.test(value)) return refuse(field, "must be 0x followed by hex characters")
  if (value.length !== 42) return refuse(field, `must be 20 bytes (0x + 40 hex characters); got ${value.length - 2} hex characters`)
  if (!isAddress(value, { strict: true })) return refuse(field, "has a bad EIP-55 checksum")
  const address = getAddress(value)
  if (address === zeroAddress) return refuse(field, "is the zero address")
  return ok(address)
}

/** A base-unit amount: a canonical decimal string, 1 ≤ amount ≤ 2^256 − 1. */
const checkAmount = (field: string, value: unknown): Checked<bigint> => {
  if (typeof value !== "string" || !/^(0|[1-9][0-9]*)$/.test(value)) {
    return refuse(field, "must be a whole number of the token's base units, as a decimal string without sign, point or leading zeros")
  }
  if (value.length > 78) return refuse(field, "is larger than a uint256")
  const amount = BigInt(value)
  if (amount > MAX_UINT256) return refuse(field, "is larger than a uint256 (2^256 − 1)")
  if (amount === 0n) return refuse(field, "must be at least 1 base unit")
  return ok(amount)
}

/**
 * One `accepts[]` entry against what this client pays with, under `ceiling` (base units of
 * the asset). `upto`'s amount is its maximum: that is what gets signed, so that is what the
 * ceiling bounds.
 */
export const checkRequirement = (requirement: unknown, scope: PayerScope, ceiling: bigint): Checked<CheckedRequirement> => {
  if (!isRecord(requirement)) return refuse("accepts[]", "must be an object")
  const { scheme, network, asset, amount, payTo, maxTimeoutSeconds, extra } = requirement
  if (!isPaymentScheme(scheme)) return refuse("scheme", `${JSON.stringify(scheme)} is not paid by this client (exact or upto)`)
  const chainId = chainIdOf(network)
  if (chainId === undefined) return refuse("network", `${JSON.stringify(network)} is not a CAIP-2 eip155:<chainId> network`)
  if (chainId !== scope.chainId) return refuse("network", `eip155:${chainId} is not the chain this payer holds a grant on (eip155:${scope.chainId})`)
  if (!isRecord(extra) || extra["assetTransferMethod"] !== ERC7710) {
    return refuse("extra.assetTransferMethod", `must be "${ERC7710}": this client pays from a smart account through a delegation`)
  }
  const token = checkAddress("asset", asset)
  if (!token.ok) return token
  if (!scope.assets.some((a) => a.address.toLowerCase() === token.value.toLowerCase())) {
    return refuse("asset", `${token.value} is not a token this payer can pay with (${scope.assets.map((a) => a.symbol ?? a.address).join(", ")})`)
  }
  const units = checkAmount("amount", amount)
  if (!units.ok) return units
  if (units.value > ceiling) return refuse("amount", `${units.value} base units is over this call's ceiling of ${ceiling}`)
  const recipient = checkAddress("payTo", payTo)
  if (!recipient.ok) return recipient
  if (typeof maxTimeoutSeconds !== "number" || !Number.isInteger(maxTimeoutSeconds) || maxTimeoutSeconds < 1 || maxTimeoutSeconds > MAX_TIMEOUT_SECONDS) {
    return refuse("maxTimeoutSeconds", `must be a whole number of seconds from 1 to ${MAX_TIMEOUT_SECONDS}`)
  }
  const facilitator = checkAddress("extra.facilitatorAddress", extra["facilitatorAddress"])
  if (!facilitator.ok) return facilitator
  return ok({
    scheme,
    chainId,
    asset: token.value,
    payTo: recipient.value,
    amount: units.value,
    maxTimeoutSeconds,
    facilitator: facilitator.value
  })
}

export interface CheckedResource {
  /** The resource as the server names it (`PaymentRequired.resource.url`). */
  readonly url: string
  readonly description?: string
  /** The URL the client actually requested, when known (a server may name its resource otherwise). */
  readonly requestedUrl?: string
}

const checkText = (field: string, value: unknown, max: number): Checked<string | undefined> => {
  if (value === undefined) return ok(undefined)
  if (typeof value !== "string") return refuse(field, "must be a string")
  if (value.length > max) return refuse(field, `is ${value.length} characters; at most ${max}`)
  const bad = controlCharacter(value)
  if (bad !== undefined) return refuse(field, `contains a control character (${bad})`)
  return ok(value)
}

/** The `PaymentRequired` document as a whole: version, the resource it is for, a non-empty `accepts`. */
export const checkPaymentRequired = (document: unknown): Checked<CheckedResource> => {
  if (!isRecord(document)) return refuse("PAYMENT-REQUIRED", "must be a JSON object")
  if (document["x402Version"] !== X402_VERSION) return refuse("x402Version", `must be ${X402_VERSION}`)
  const resource = document["resource"]
  if (!isRecord(resource)) return refuse("resource", "must be an object with a url")
  const url = checkText("resource.url", resource["url"], MAX_URL_LENGTH)
  if (!url.ok) return url
  if (url.value === undefined) return refuse("resource.url", "is required")
  let parsed: URL
  try {
    parsed = new URL(url.value)
  } catch {
    return refuse("resource.url", "is not an absolute URL")
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return refuse("resource.url", "must be an http or https URL")
  const description = checkText("resource.description", resource["description"], MAX_TEXT_LENGTH)
  if (!description.ok) return description
  const accepts = document["accepts"]
  if (!Array.isArray(accepts) || accepts.length === 0) return refuse("accepts", "must be a non-empty array")
  if (accepts.length > 32) return refuse("accepts", "has more than 32 entries")
  return ok({ url: url.value, ...(description.value === undefined ? {} : { description: description.value }) })
}
