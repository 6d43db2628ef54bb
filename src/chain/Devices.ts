/**
 * The owner account's devices as the chain holds them (docs/account.md, "Devices").
 *
 * A Delegation Framework v1.3 `HybridDeleGator` holds at most one EOA owner plus any number
 * of P-256 public keys (passkeys), each under a string key id (for a WebAuthn passkey: its
 * credential id). Any one of them signs for the account: user operations (EIP-712 digest of
 * `AccountStack.userOperationTypedData`) and ERC-1271 signatures (delegations, permits).
 * There is no threshold. The account refuses to be left with no signer
 * (`CannotRemoveLastSigner`, `SignersCannotBeEmpty`), a key off the curve (`KeyNotOnCurve`),
 * an empty key id (`InvalidEmptyKey`) and a key id twice (`KeyAlreadyExists`).
 *
 * Here: validation of a passkey's public key, the account's own calls that change its
 * signers (`addKey`, `removeKey`, `transferOwnership`, `renounceOwnership`, `updateSigners`:
 * each only from the account itself, so each is a call of an owner operation), the encoding
 * of a WebAuthn assertion into the signature the account verifies, and the devices read back
 * from the chain.
 */
import { HybridDeleGator } from "@metamask/delegation-abis"
import { SIGNATURE_ABI_PARAMS } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import {
  type Address,
  BaseError,
  bytesToHex,
  encodeAbiParameters,
  encodeFunctionData,
  encodePacked,
  getAddress,
  type Hash,
  type Hex,
  hexToBytes,
  keccak256,
  zeroAddress
} from "viem"
import type { Call } from "./Accounts4337.ts"
import { Chain, ChainUnavailable } from "./Chain.ts"

/** NIST P-256 (secp256r1): field prime, curve constant b (a = -3), group order. */
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn
export const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n

/** The DER prefix of a P-256 SubjectPublicKeyInfo (what `AuthenticatorAttestationResponse.getPublicKey()` returns). */
const SPKI_P256_PREFIX = "3059301306072a8648ce3d020106082a8648ce3d030107034200"

export interface PasskeyPublicKey {
  /** The key id the account stores (`addKey(keyId, x, y)`); for a passkey, its base64url credential id. */
  readonly keyId: string
  readonly x: bigint
  readonly y: bigint
}

export type Checked<A> =
  | { readonly _tag: "Ok"; readonly value: A }
  | { readonly _tag: "Invalid"; readonly field: string; readonly message: string }

const ok = <A>(value: A): Checked<A> => ({ _tag: "Ok", value })
const invalid = <A>(field: string, message: string): Checked<A> => ({ _tag: "Invalid", field, message })

/** The account's own check (`ec_isOnCurve` of the SCL library): coordinates below p, not the origin, on the curve. */
export const isOnP256 = (x: bigint, y: bigint): boolean => {
  if (x < 0n || y < 0n || x >= P || y >= P || (x === 0n && y === 0n)) return false
  return (y * y) % P === (((x * x % P) * x - 3n * x + B) % P + P) % P
}

/** base64url without padding, the alphabet of WebAuthn credential ids and challenges. */
const BASE64URL = /^[A-Za-z0-9_-]{1,512}$/

/**
 * A passkey's public key from its credential: `publicKey` as SEC1 uncompressed (`0x04 ‖ x ‖ y`)
 * or as the SPKI DER a browser gives (`getPublicKey()`), `keyId` its base64url credential id.
 */
export const parsePasskeyPublicKey = (keyId: string, publicKey: Hex): Checked<PasskeyPublicKey> => {
  if (!BASE64URL.test(keyId)) return invalid("keyId", "a passkey's key id is its base64url credential id (1 to 512 characters of A-Z a-z 0-9 _ -)")
  const body = /^0x[0-9a-fA-F]*$/.test(publicKey) ? publicKey.slice(2).toLowerCase() : ""
  const sec1 = body.startsWith(SPKI_P256_PREFIX) && body.length === SPKI_P256_PREFIX.length + 130
    ? body.slice(SPKI_P256_PREFIX.length)
    : body
  if (sec1.length !== 130 || !sec1.startsWith("04")) {
    return invalid("publicKey", "a P-256 public key is 65 bytes 0x04 ‖ x ‖ y (uncompressed SEC1) or its SubjectPublicKeyInfo DER")
  }
  const x = BigInt(`0x${sec1.slice(2, 66)}`)
  const y = BigInt(`0x${sec1.slice(66)}`)
  if (!isOnP256(x, y)) return invalid("publicKey", "the public key is not a point of the P-256 curve")
  return ok({ keyId, x, y })
}

/** What the account stores a key under: `keccak256(bytes(keyId))`. */
export const keyIdHashOf = (keyId: string): Hash => keccak256(encodePacked(["string"], [keyId]))

// ---- the account's own calls that change its signers (each a call of an owner operation) ----

const self = (account: Address, data: Hex): Call => ({ to: account, value: 0n, data })

/** Adds a passkey as a signer. */
export const addPasskeyCall = (account: Address, key: PasskeyPublicKey): Call =>
  self(account, encodeFunctionData({ abi: HybridDeleGator, functionName: "addKey", args: [key.keyId, key.x, key.y] }))

/** Removes a passkey; the account refuses it when that key is its only signer. */
export const removePasskeyCall = (account: Address, keyId: string): Call =>
  self(account, encodeFunctionData({ abi: HybridDeleGator, functionName: "removeKey", args: [keyId] }))

/** Replaces the one EOA owner key (the only way an account holds another EOA device). */
export const replaceOwnerCall = (account: Address, newOwner: Address): Call =>
  self(account, encodeFunctionData({ abi: HybridDeleGator, functionName: "transferOwnership", args: [newOwner] }))

/** Removes the EOA owner, leaving the passkeys; the account refuses it when it holds no passkey. */
export const removeOwnerCall = (account: Address): Call =>
  self(account, encodeFunctionData({ abi: HybridDeleGator, functionName: "renounceOwnership", args: [] }))

/** Replaces every signer at once: the EOA owner (zero: none) and all passkeys (the call a recovery makes). */
export const replaceSignersCall = (account: Address, owner: Address | null, keys: ReadonlyArray<PasskeyPublicKey>): Call =>
  self(account, encodeFunctionData({
    abi: HybridDeleGator,
    functionName: "updateSigners",
    args: [owner ?? zeroAddress, keys.map((k) => k.keyId), keys.map((k) => k.x), keys.map((k) => k.y)]
  }))

// ---- passkey signatures ----

/** A WebAuthn assertion as an authenticator returns it (`navigator.credentials.get`). */
export interface WebAuthnAssertion {
  readonly authenticatorData: Hex
  /** The client data JSON as text (UTF-8 of `response.clientDataJSON`). */
  readonly clientDataJSON: string
  /** The ECDSA signature, ASN.1 DER as authenticators give it. */
  readonly signature: Hex
}

/** The WebAuthn challenge for `hash`: the account verifies `base64url(hash)` inside the client data. */
export const passkeyChallenge = (hash: Hash): string => Buffer.from(hexToBytes(hash)).toString("base64url")

/** r and s of a DER `SEQUENCE { INTEGER r, INTEGER s }`, strictly parsed (no trailing bytes, minimal lengths). */
export const parseDerSignature = (der: Hex): { r: bigint; s: bigint } | undefined => {
  const b = /^0x[0-9a-fA-F]*$/.test(der) && der.length % 2 === 0 ? hexToBytes(der) : new Uint8Array()
  if (b.length < 8 || b[0] !== 0x30 || b[1] !== b.length - 2) return undefined
  const integer = (at: number): { value: bigint; next: number } | undefined => {
    const len = b[at + 1]
    if (b[at] !== 0x02 || len === undefined || len < 1 || len > 33 || at + 2 + len > b.length) return undefined
    const bytes = b.subarray(at + 2, at + 2 + len)
    if (bytes[0]! >= 0x80 || (len > 1 && bytes[0] === 0 && bytes[1]! < 0x80)) return undefined
    return { value: BigInt(bytesToHex(bytes)), next: at + 2 + len }
  }
  const r = integer(2)
  const s = r === undefined ? undefined : integer(r.next)
  if (r === undefined || s === undefined || s.next !== b.length) return undefined
  if (r.value === 0n || s.value === 0n || r.value >= P256_N || s.value >= P256_N) return undefined
  return { r: r.value, s: s.value }
}

const FLAG_UP = 0x01
const FLAG_UV = 0x04

/**
 * The HybridDeleGator signature of a passkey for `hash` (a user operation's EIP-712 digest, or
 * an ERC-1271 digest): `abi.encode(keyIdHash, r, s, authenticatorData, requireUserVerification,
 * clientDataJSONPrefix, clientDataJSONSuffix, responseTypeLocation)`, the layout of the kit's
 * `encodeDeleGatorSignature`. The client data must carry `hash` as its challenge and the
 * `webauthn.get` type; s is taken in the lower half of the order (the account refuses the
 * other). User verification (PIN, biometrics) is required by default, and then also demanded
 * on chain (`requireUserVerification`).
 */
export const encodePasskeySignature = (
  keyId: string,
  hash: Hash,
  assertion: WebAuthnAssertion,
  options: { readonly requireUserVerification?: boolean } = {}
): Checked<Hex> => {
  const requireUv = options.requireUserVerification ?? true
  const authData = /^0x[0-9a-fA-F]*$/.test(assertion.authenticatorData) ? hexToBytes(assertion.authenticatorData) : new Uint8Array()
  if (authData.length < 37) return invalid("authenticatorData", "authenticator data is at least 37 bytes")
  const flags = authData[32]!
  if ((flags & FLAG_UP) === 0) return invalid("authenticatorData", "the authenticator did not attest user presence")
  if (requireUv && (flags & FLAG_UV) === 0) return invalid("authenticatorData", "the authenticator did not verify the user (PIN or biometrics)")
  const marker = `"challenge":"${passkeyChallenge(hash)}"`
  const at = assertion.clientDataJSON.indexOf(marker)
  if (at < 0) return invalid("clientDataJSON", "the client data's challenge is not this operation's hash")
  const typeAt = assertion.clientDataJSON.indexOf('"type":"webauthn.get"')
  if (typeAt < 0) return invalid("clientDataJSON", "the client data is not a webauthn.get assertion")
  const rs = parseDerSignature(assertion.signature)
  if (rs === undefined) return invalid("signature", "the signature is not a DER-encoded P-256 ECDSA signature")
  const s = rs.s > P256_N / 2n ? P256_N - rs.s : rs.s
  const challengeAt = at + '"challenge":"'.length
  return ok(encodeAbiParameters(SIGNATURE_ABI_PARAMS, [
    keyIdHashOf(keyId),
    rs.r,
    s,
    bytesToHex(authData),
    requireUv,
    assertion.clientDataJSON.slice(0, challengeAt),
    assertion.clientDataJSON.slice(challengeAt + passkeyChallenge(hash).length),
    BigInt(typeAt)
  ]))
}

/**
 * Verifies an assertion against a passkey off chain, as the account will (signature over
 * `authenticatorData ‖ sha256(clientDataJSON)`): lets a service answer a bad signature
 * before any bundler sees it.
 */
export const verifyPasskeyAssertion = (key: PasskeyPublicKey, assertion: WebAuthnAssertion): boolean => {
  try {
    const word = (v: bigint) => Buffer.from(v.toString(16).padStart(64, "0"), "hex").toString("base64url")
    const publicKey = crypto.createPublicKey({ key: { kty: "EC", crv: "P-256", x: word(key.x), y: word(key.y) }, format: "jwk" })
    const clientDataHash = crypto.createHash("sha256").update(assertion.clientDataJSON, "utf8").digest()
    const signed = Buffer.concat([Buffer.from(hexToBytes(assertion.authenticatorData)), clientDataHash])
    return crypto.verify("sha256", signed, publicKey, Buffer.from(hexToBytes(assertion.signature)))
  } catch {
    return false
  }
}

/**
 * A passkey signature of the right shape for gas estimation (verification fails, as with the
 * EOA stub). The client data is made longer than a browser's so the estimate covers the real
 * signature's call data.
 */
export const passkeyStubSignature = (keyId: string): Hex =>
  encodeAbiParameters(SIGNATURE_ABI_PARAMS, [
    keyIdHashOf(keyId),
    P256_N / 2n - 1n,
    P256_N / 2n - 1n,
    bytesToHex(new Uint8Array(37 + 64).fill(0x05)),
    true,
    '{"type":"webauthn.get","challenge":"',
    `","origin":"https://${"x".repeat(200)}","crossOrigin":false,"other_keys_can_be_added_here":"${"x".repeat(100)}"}`,
    1n
  ])

// ---- reads ----

export interface DeviceEvent {
  readonly blockNumber: bigint
  readonly transactionHash: Hash
  /** Block time, unix seconds. */
  readonly timestamp: bigint
}

export interface OnChainPasskey extends PasskeyPublicKey {
  readonly keyIdHash: Hash
  readonly added: DeviceEvent
}

export interface OnChainDevices {
  /** False: no code yet, the signers are the account's deploy parameters (its owner key). */
  readonly deployed: boolean
  readonly owner: { readonly address: Address; readonly since: DeviceEvent | undefined } | null
  readonly passkeys: ReadonlyArray<OnChainPasskey>
  /** Keys the account holds whose `AddedP256Key` lies before `fromBlock` (none when it is the deployment block). */
  readonly unresolvedKeyIdHashes: ReadonlyArray<Hash>
}

const rpc = <A>(operation: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (cause) => new ChainUnavailable({ operation, message: cause instanceof BaseError ? cause.shortMessage : String(cause), cause })
  })

/**
 * The passkey the account holds under `keyId` (`getKey`), or undefined when it holds none
 * (an account with no code holds no passkey: its only signer is the EOA it will be deployed with).
 */
export const readPasskey = (client: Chain["Service"]["client"], account: Address, keyId: string) =>
  Effect.gen(function*() {
    const code = yield* rpc("getCode", () => client.getCode({ address: account }))
    if (code === undefined || code === "0x") return undefined
    const [x, y] = yield* rpc("getKey", () => client.readContract({ address: account, abi: HybridDeleGator, functionName: "getKey", args: [keyId] }))
    return x === 0n && y === 0n ? undefined : { keyId, x, y } satisfies PasskeyPublicKey
  })

/**
 * The account's signers as the chain holds them now (`owner()`, `getKeyIdHashes()`), each with
 * the event that put it there (`OwnershipTransferred`, `AddedP256Key`: the key id string lives
 * only in that event). `fromBlock`: where to search the logs (the account's deployment block).
 */
export const readDevices = Effect.fn("Devices.read")(function*(account: Address, options: { readonly fromBlock?: bigint } = {}) {
  const chain = yield* Chain
  const client = chain.client
  if (!(yield* chain.isDeployed(account))) return { deployed: false, owner: null, passkeys: [], unresolvedKeyIdHashes: [] } satisfies OnChainDevices
  const [owner, hashes] = yield* Effect.all([
    rpc("owner", () => client.readContract({ address: account, abi: HybridDeleGator, functionName: "owner" })),
    rpc("getKeyIdHashes", () => client.readContract({ address: account, abi: HybridDeleGator, functionName: "getKeyIdHashes" }))
  ])
  const fromBlock = options.fromBlock ?? 0n
  const [added, transfers] = yield* Effect.all([
    hashes.length === 0 ? Effect.succeed([]) : rpc("AddedP256Key logs", () =>
      client.getContractEvents({ address: account, abi: HybridDeleGator, eventName: "AddedP256Key", args: { keyIdHash: [...hashes] }, fromBlock })),
    owner === zeroAddress ? Effect.succeed([]) : rpc("OwnershipTransferred logs", () =>
      client.getContractEvents({ address: account, abi: HybridDeleGator, eventName: "OwnershipTransferred", args: { newOwner: owner }, fromBlock }))
  ])
  const blocks = new Map<bigint, bigint>()
  const eventOf = (log: { blockNumber: bigint | null; transactionHash: Hash | null }) =>
    Effect.gen(function*() {
      const blockNumber = log.blockNumber ?? 0n
      if (!blocks.has(blockNumber)) {
        const block = yield* rpc("getBlock", () => client.getBlock({ blockNumber }))
        blocks.set(blockNumber, block.timestamp)
      }
      return { blockNumber, transactionHash: log.transactionHash ?? "0x", timestamp: blocks.get(blockNumber)! } satisfies DeviceEvent
    })
  const passkeys: Array<OnChainPasskey> = []
  const unresolvedKeyIdHashes: Array<Hash> = []
  for (const keyIdHash of hashes) {
    // The latest add of a key still held is the one in force (a key id is added again only after its removal).
    const log = added.filter((l) => l.args.keyIdHash === keyIdHash).at(-1)
    if (log === undefined) {
      unresolvedKeyIdHashes.push(keyIdHash)
      continue
    }
    passkeys.push({ keyId: log.args.keyId!, keyIdHash, x: log.args.x!, y: log.args.y!, added: yield* eventOf(log) })
  }
  const lastTransfer = transfers.at(-1)
  return {
    deployed: true,
    owner: owner === zeroAddress ? null : { address: getAddress(owner), since: lastTransfer === undefined ? undefined : yield* eventOf(lastTransfer) },
    passkeys,
    unresolvedKeyIdHashes
  } satisfies OnChainDevices
})
