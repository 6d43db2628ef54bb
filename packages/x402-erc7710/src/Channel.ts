/**
 * A payment channel under a grant (issue 46 item 5; docs/payments.md, "Micropayments"): many
 * payments checked in memory, settled by one redemption that the chain bounds.
 *
 * - The channel is a delegation from the grant's delegate (the agent) to the merchant's
 *   settlement key, whose authority is the grant, carrying two caveats: the VoucherEnforcer
 *   (src/chain/contracts/Vouchers.sol: terms `signer ‖ token ‖ payTo ‖ cap ‖ salt`, channel
 *   id = keccak256(terms)) and a TimestampEnforcer (settle strictly before `validBefore`).
 * - Each payment is a voucher the agent's key signs (EIP-712, domain "DAS Voucher" v1 at the
 *   enforcer): `Voucher(bytes32 channel, uint256 cumulativeAmount, uint256 nonce)`.
 * - The merchant checks a voucher in memory (`ChannelBook.accept`) and keeps the highest; it
 *   settles with one `redeemDelegations` of `token.transfer(payTo, highest − settled)` whose
 *   leaf carries the voucher as the enforcer's args. The enforcer moves exactly what the
 *   voucher adds, the grant's caveats (budget, per-action cap, recipients, expiry, revoke) run
 *   on the same transfer: nothing beyond the grant, nor beyond what the agent signed, settles.
 */
import { type Caveat, type Delegation } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder, hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { invert } from "@noble/curves/abstract/modular"
import { secp256k1 } from "@noble/curves/secp256k1"
import {
  type Address,
  encodeAbiParameters,
  encodePacked,
  getAddress,
  type Hex,
  hexToBigInt,
  keccak256,
  recoverPublicKey,
  size,
  slice,
  toHex
} from "viem"
import { publicKeyToAddress } from "viem/accounts"
import { checkChain, decodeChain, permissionContextOf, redeemCallData, transferExecution } from "./PaymentDelegation.ts"
import type { DelegationEnvironment } from "./Wire.ts"

/** The VoucherEnforcer's terms: whose vouchers, in which token, to whom, up to what in total. */
export interface ChannelTerms {
  readonly signer: Address
  readonly token: Address
  readonly payTo: Address
  readonly cap: bigint
  readonly salt: Hex
}

/** One payment: the channel's new total, signed by the agent. */
export interface Voucher {
  readonly channel: Hex
  readonly cumulativeAmount: bigint
  readonly nonce: bigint
  readonly signature: Hex
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

export const channelTermsHex = (t: ChannelTerms): Hex =>
  encodePacked(["address", "address", "address", "uint256", "bytes32"], [t.signer, t.token, t.payTo, t.cap, t.salt])

/** The terms in a VoucherEnforcer caveat; `undefined` if they are not 124 bytes. */
export const readChannelTerms = (terms: Hex): ChannelTerms | undefined => {
  if (size(terms) !== 124) return undefined
  return {
    signer: getAddress(slice(terms, 0, 20)),
    token: getAddress(slice(terms, 20, 40)),
    payTo: getAddress(slice(terms, 40, 60)),
    cap: hexToBigInt(slice(terms, 60, 92)),
    salt: slice(terms, 92, 124)
  }
}

/** The channel id the enforcer computes: keccak256 of its terms. */
export const channelIdOf = (terms: ChannelTerms): Hex => keccak256(channelTermsHex(terms))

export const VOUCHER_TYPES = {
  Voucher: [
    { name: "channel", type: "bytes32" },
    { name: "cumulativeAmount", type: "uint256" },
    { name: "nonce", type: "uint256" }
  ]
} as const

/** The EIP-712 document of a voucher, as the VoucherEnforcer at `enforcer` on `chainId` checks it. */
export const voucherTypedData = (
  input: { readonly chainId: number; readonly enforcer: Address; readonly channel: Hex; readonly cumulativeAmount: bigint; readonly nonce: bigint }
) => ({
  domain: { name: "DAS Voucher", version: "1", chainId: input.chainId, verifyingContract: input.enforcer },
  types: VOUCHER_TYPES,
  primaryType: "Voucher" as const,
  message: { channel: input.channel, cumulativeAmount: input.cumulativeAmount, nonce: input.nonce }
})

const DOMAIN_TYPEHASH = keccak256(toHex("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
const VOUCHER_TYPEHASH = keccak256(toHex("Voucher(bytes32 channel,uint256 cumulativeAmount,uint256 nonce)"))
const word = (n: bigint) => n.toString(16).padStart(64, "0")

/**
 * The EIP-712 digest of vouchers at one enforcer, the domain separator hashed once: the same
 * digest as `hashTypedData(voucherTypedData(...))` (tested), without its generic encoding.
 */
export const voucherDigester = (chainId: number, enforcer: Address) => {
  const domainSeparator = keccak256(encodeAbiParameters(
    [{ type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" }],
    [DOMAIN_TYPEHASH, keccak256(toHex("DAS Voucher")), keccak256(toHex("1")), BigInt(chainId), enforcer]
  ))
  return (channel: Hex, cumulativeAmount: bigint, nonce: bigint): Hex => {
    const struct = keccak256(`${VOUCHER_TYPEHASH}${channel.slice(2)}${word(cumulativeAmount)}${word(nonce)}`)
    return keccak256(`0x1901${domainSeparator.slice(2)}${struct.slice(2)}`)
  }
}

type CurvePoint = ReturnType<typeof secp256k1.ProjectivePoint.fromHex>
const N = secp256k1.CURVE.n
const G = secp256k1.ProjectivePoint.BASE

/** A signer's public key with its multiplication table built (once per channel): verifying against it is two table multiplications. */
export const precomputedKey = (publicKey: Hex): CurvePoint => secp256k1.utils.precompute(8, secp256k1.ProjectivePoint.fromHex(publicKey.slice(2))) as CurvePoint

/**
 * Whether `signature` (r ‖ s ‖ v, 65 bytes) over `digest` is `key`'s and would recover to it on
 * chain (OpenZeppelin's ECDSA.tryRecover, as the VoucherEnforcer uses): v 27 or 28, r and s in
 * range, s in the lower half, and u1·G + u2·key = R whose x is r and whose y parity is v's.
 */
export const verifyVoucherSignature = (key: CurvePoint, digest: Hex, signature: Hex): boolean => {
  if (signature.length !== 132) return false
  const r = BigInt(`0x${signature.slice(2, 66)}`)
  const s = BigInt(`0x${signature.slice(66, 130)}`)
  const v = Number.parseInt(signature.slice(130, 132), 16)
  if ((v !== 27 && v !== 28) || r <= 0n || r >= N || s <= 0n || s > N >> 1n) return false
  const inverse = invert(s, N)
  const u1 = (BigInt(digest) % N) * inverse % N
  const u2 = r * inverse % N
  const sum = (u1 === 0n ? secp256k1.ProjectivePoint.ZERO : G.multiply(u1)).add(key.multiply(u2))
  if (sum.equals(secp256k1.ProjectivePoint.ZERO)) return false
  const R = sum.toAffine()
  return R.x === r && (R.y & 1n) === BigInt(v - 27)
}

/** The VoucherEnforcer's args carrying `voucher` (what the merchant puts on the leaf to settle it). */
export const voucherArgs = (voucher: Voucher): Hex =>
  encodeAbiParameters([{ type: "uint256" }, { type: "uint256" }, { type: "bytes" }], [voucher.cumulativeAmount, voucher.nonce, voucher.signature])

/** The channel's caveats: the VoucherEnforcer's, then a deadline for settling. */
export const channelCaveats = (
  environment: DelegationEnvironment,
  input: { readonly enforcer: Address; readonly terms: ChannelTerms; readonly validBefore: number }
): ReadonlyArray<Caveat> => [
  { enforcer: input.enforcer, terms: channelTermsHex(input.terms), args: "0x" },
  ...createCaveatBuilder(environment as never)
    .addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: input.validBefore })
    .build()
    .map((c) => ({ ...c, args: "0x" as Hex }))
]

/** The channel delegation under `parent` (the signed grant), unsigned: from the grant's delegate to the merchant's settlement key. */
export const makeChannelDelegation = (
  environment: DelegationEnvironment,
  input: {
    readonly parent: Delegation
    readonly merchant: Address
    readonly enforcer: Address
    readonly terms: ChannelTerms
    readonly validBefore: number
    readonly salt: Hex
  }
): Delegation => ({
  delegate: input.merchant,
  delegator: input.parent.delegate,
  authority: hashDelegation(input.parent),
  caveats: [...channelCaveats(environment, input)],
  salt: input.salt,
  signature: "0x"
})

/** The settlement: `redeemDelegations` of `token.transfer(payTo, voucher − settled)` with the voucher on the leaf. */
export const channelSettlementCallData = (
  chain: ReadonlyArray<Delegation>,
  input: { readonly enforcer: Address; readonly terms: ChannelTerms; readonly voucher: Voucher; readonly amount: bigint }
): Hex => {
  const [leaf, ...rest] = chain
  if (leaf === undefined) throw new Error("the channel's permission context holds no delegation")
  const withVoucher: Delegation = {
    ...leaf,
    caveats: leaf.caveats.map((c) => (same(c.enforcer, input.enforcer) ? { ...c, args: voucherArgs(input.voucher) } : c))
  }
  return redeemCallData(permissionContextOf([withVoucher, ...rest]), transferExecution(input.terms.token, input.terms.payTo, input.amount))
}

/** What the agent sends with a payment: the voucher, and with the first one the channel itself. */
export interface VoucherWire {
  readonly channel: Hex
  readonly cumulativeAmount: string
  readonly nonce: string
  readonly signature: Hex
  /** The channel's permission context (leaf first: the channel, then the grant with its args), with the first voucher. */
  readonly permissionContext?: Hex
}

export const VOUCHER_HEADER = "PAYMENT-VOUCHER"

export const encodeVoucherHeader = (wire: VoucherWire): string => Buffer.from(JSON.stringify(wire), "utf8").toString("base64")

const isHex = (u: unknown, bytes?: number): u is Hex =>
  typeof u === "string" && /^0x([0-9a-fA-F]{2})*$/.test(u) && (bytes === undefined || u.length === 2 + 2 * bytes)
const decimal = (u: unknown): bigint | undefined =>
  typeof u === "string" && /^(0|[1-9][0-9]{0,76})$/.test(u) ? BigInt(u) : undefined

/** The header back to a voucher (and the channel's context with the first); a reason when malformed. */
export const decodeVoucherHeader = (
  header: string
): { readonly ok: true; readonly voucher: Voucher; readonly permissionContext?: Hex } | { readonly ok: false; readonly reason: string } => {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(header, "base64").toString("utf8"))
  } catch {
    return { ok: false, reason: "the voucher header is not base64 JSON" }
  }
  if (typeof parsed !== "object" || parsed === null) return { ok: false, reason: "the voucher header is not an object" }
  const w = parsed as Record<string, unknown>
  const cumulativeAmount = decimal(w["cumulativeAmount"])
  const nonce = decimal(w["nonce"])
  if (!isHex(w["channel"], 32)) return { ok: false, reason: "channel: not 32 bytes of hex" }
  if (cumulativeAmount === undefined) return { ok: false, reason: "cumulativeAmount: not a decimal amount" }
  if (nonce === undefined) return { ok: false, reason: "nonce: not a decimal number" }
  if (!isHex(w["signature"], 65)) return { ok: false, reason: "signature: not 65 bytes of hex" }
  if (w["permissionContext"] !== undefined && !isHex(w["permissionContext"])) return { ok: false, reason: "permissionContext: not hex" }
  const voucher = { channel: w["channel"], cumulativeAmount, nonce, signature: w["signature"] }
  return w["permissionContext"] === undefined ? { ok: true, voucher } : { ok: true, voucher, permissionContext: w["permissionContext"] as Hex }
}

/** The agent's side: signs each payment as the channel's next cumulative voucher. */
export const channelPayer = (input: {
  readonly chainId: number
  readonly enforcer: Address
  readonly signer: { readonly signTypedData: (doc: ReturnType<typeof voucherTypedData>) => Promise<Hex> }
  readonly terms: ChannelTerms
  readonly permissionContext: Hex
}) => {
  const channel = channelIdOf(input.terms)
  let cumulative = 0n
  let nonce = 0n
  let opened = false
  return {
    channel,
    /** The header for a payment of `amount`; refuses past the channel's cap (nothing is signed). */
    pay: async (amount: bigint): Promise<string> => {
      if (amount <= 0n) throw new Error("a payment is more than zero")
      if (cumulative + amount > input.terms.cap) throw new Error(`the channel's cap ${input.terms.cap} would be passed`)
      cumulative += amount
      nonce += 1n
      const voucher = { channel, cumulativeAmount: cumulative, nonce }
      const signature = await input.signer.signTypedData(voucherTypedData({ chainId: input.chainId, enforcer: input.enforcer, ...voucher }))
      const wire: VoucherWire = {
        channel,
        cumulativeAmount: cumulative.toString(),
        nonce: nonce.toString(),
        signature,
        ...(opened ? {} : { permissionContext: input.permissionContext })
      }
      opened = true
      return encodeVoucherHeader(wire)
    },
    get cumulative() {
      return cumulative
    }
  }
}

/** An open channel as the merchant holds it in memory. */
export interface OpenChannel {
  readonly id: Hex
  readonly terms: ChannelTerms
  /** The channel's permission context decoded, leaf first. */
  readonly chain: ReadonlyArray<Delegation>
  /** The owner's account (the chain's root delegator). */
  readonly payer: Address
  /** The most a voucher may total: the cap, and at opening what the grant's budget still allowed on top of what was settled. */
  readonly limit: bigint
  settled: bigint
  highest: Voucher | undefined
  /** The signer's public key, precomputed, once a first voucher recovered to the signer. */
  key?: CurvePoint | undefined
}

export type Accepted = { readonly ok: true; readonly channel: OpenChannel } | { readonly ok: false; readonly reason: string }

/**
 * The merchant's book of open channels: a voucher is checked in memory (the channel is open,
 * the nonce is new, the total grows by at least the price and stays within the limit, the
 * agent signed it) and only the highest is kept.
 */
export class ChannelBook {
  readonly channels = new Map<string, OpenChannel>()

  add(channel: OpenChannel): void {
    if (!this.channels.has(channel.id.toLowerCase())) this.channels.set(channel.id.toLowerCase(), channel)
  }

  get(id: Hex): OpenChannel | undefined {
    return this.channels.get(id.toLowerCase())
  }

  private readonly digest: ReturnType<typeof voucherDigester>

  constructor(readonly config: { readonly chainId: number; readonly enforcer: Address }) {
    this.digest = voucherDigester(config.chainId, config.enforcer)
  }

  /**
   * Accepts `voucher` as a payment of `price`, or says why not (nothing changes then). The
   * channel's first voucher recovers the signer's public key (and its table is built); every
   * later one is verified against it synchronously, so no other voucher interleaves.
   */
  async accept(voucher: Voucher, price: bigint): Promise<Accepted> {
    const channel = this.get(voucher.channel)
    if (channel === undefined) return { ok: false, reason: "unknown channel: send the channel's permission context with its first voucher" }
    const bounds = this.bounds(channel, voucher, price)
    if (bounds !== undefined) return { ok: false, reason: bounds }
    const digest = this.digest(voucher.channel, voucher.cumulativeAmount, voucher.nonce)
    if (channel.key === undefined) {
      let publicKey: Hex
      try {
        publicKey = await recoverPublicKey({ hash: digest, signature: voucher.signature })
      } catch {
        return { ok: false, reason: "the voucher's signature does not recover" }
      }
      if (!same(publicKeyToAddress(publicKey), channel.terms.signer)) return { ok: false, reason: "the voucher is not signed by the channel's signer" }
      channel.key ??= precomputedKey(publicKey)
    }
    if (!verifyVoucherSignature(channel.key, digest, voucher.signature)) return { ok: false, reason: "the voucher is not signed by the channel's signer" }
    // The first voucher awaited its recovery: another may have been kept meanwhile.
    const again = this.bounds(channel, voucher, price)
    if (again !== undefined) return { ok: false, reason: again }
    channel.highest = voucher
    return { ok: true, channel }
  }

  private bounds(channel: OpenChannel, voucher: Voucher, price: bigint): string | undefined {
    const highest = channel.highest
    const floor = highest?.cumulativeAmount ?? channel.settled
    if (highest !== undefined && voucher.nonce <= highest.nonce) return `replayed or old voucher: nonce ${voucher.nonce} is not above ${highest.nonce}`
    if (voucher.cumulativeAmount < floor + price) {
      return `the voucher adds ${voucher.cumulativeAmount - floor} to the channel's ${floor}, less than the price ${price}`
    }
    if (voucher.cumulativeAmount > channel.limit) {
      return `the voucher's total ${voucher.cumulativeAmount} passes what the channel may move (${channel.limit}: its cap and the grant's budget)`
    }
    return undefined
  }
}

/** The leaf of a channel's chain as the merchant requires it: its delegate, the VoucherEnforcer once, for this token and payee. */
export const readChannel = (
  permissionContext: Hex,
  expected: { readonly enforcer: Address; readonly merchant: Address; readonly token: Address; readonly payTo: Address }
): { readonly ok: true; readonly chain: ReadonlyArray<Delegation>; readonly terms: ChannelTerms; readonly payer: Address } | {
  readonly ok: false
  readonly reason: string
} => {
  const chain = decodeChain(permissionContext)
  if (chain === undefined) return { ok: false, reason: "the permission context does not decode" }
  const shape = checkChain(chain)
  if (!shape.ok) return shape
  if (!same(shape.leaf.delegate, expected.merchant)) return { ok: false, reason: "the channel is not delegated to this merchant's settlement key" }
  const caveats = shape.leaf.caveats.filter((c) => same(c.enforcer, expected.enforcer))
  if (caveats.length !== 1) return { ok: false, reason: "the channel holds no VoucherEnforcer caveat, or several" }
  const terms = readChannelTerms(caveats[0]!.terms)
  if (terms === undefined) return { ok: false, reason: "the VoucherEnforcer's terms are not 124 bytes" }
  if (!same(terms.token, expected.token)) return { ok: false, reason: "the channel pays another token" }
  if (!same(terms.payTo, expected.payTo)) return { ok: false, reason: "the channel pays another recipient" }
  return { ok: true, chain, terms, payer: getAddress(shape.root.delegator) }
}
