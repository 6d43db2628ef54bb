/**
 * A software WebAuthn authenticator for tests: a P-256 key pair from node:crypto and the
 * assertion a platform authenticator returns for `navigator.credentials.get` (authenticator
 * data with user presence and verification flags and a counter, the client data JSON a
 * browser writes, a DER ECDSA signature over `authenticatorData ‖ sha256(clientDataJSON)`).
 * Nothing here knows the account: the service's encoder (src/chain/Devices.ts) turns the
 * assertion into the account's signature.
 */
import * as crypto from "node:crypto"
import { bytesToHex, type Hash, type Hex, hexToBytes } from "viem"
import { encodePasskeySignature, type PasskeyPublicKey, type WebAuthnAssertion } from "../../src/chain/Devices.ts"

export interface SoftwareAuthenticator {
  readonly keyId: string
  readonly publicKey: PasskeyPublicKey
  /** The SubjectPublicKeyInfo DER a browser's `getPublicKey()` gives. */
  readonly spki: Hex
  /** 0x04 ‖ x ‖ y. */
  readonly sec1: Hex
  /** An assertion whose challenge is `base64url(hash)`. */
  assert(hash: Hash, options?: { readonly userVerified?: boolean }): WebAuthnAssertion
  /** The account's signature of `hash` by this passkey (assertion + the service's encoder). */
  sign(hash: Hash): Hex
}

export const makeSoftwareAuthenticator = (options: { readonly rpId?: string; readonly origin?: string } = {}): SoftwareAuthenticator => {
  const rpId = options.rpId ?? "wallet.example"
  const origin = options.origin ?? `https://${rpId}`
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
  const jwk = publicKey.export({ format: "jwk" })
  const coordinate = (b64: string | undefined) => BigInt(`0x${Buffer.from(b64 ?? "", "base64url").toString("hex")}`)
  const keyId = crypto.randomBytes(20).toString("base64url")
  const key: PasskeyPublicKey = { keyId, x: coordinate(jwk.x), y: coordinate(jwk.y) }
  const spki = bytesToHex(publicKey.export({ format: "der", type: "spki" }))
  const sec1 = `0x04${key.x.toString(16).padStart(64, "0")}${key.y.toString(16).padStart(64, "0")}` as Hex
  const rpIdHash = crypto.createHash("sha256").update(rpId).digest()
  let counter = 0

  const assert = (hash: Hash, assertOptions: { readonly userVerified?: boolean } = {}): WebAuthnAssertion => {
    counter += 1
    const flags = 0x01 | (assertOptions.userVerified === false ? 0 : 0x04)
    const count = Buffer.alloc(4)
    count.writeUInt32BE(counter)
    const authenticatorData = Buffer.concat([rpIdHash, Buffer.from([flags]), count])
    const clientDataJSON = JSON.stringify({
      type: "webauthn.get",
      challenge: Buffer.from(hexToBytes(hash)).toString("base64url"),
      origin,
      crossOrigin: false
    })
    const clientDataHash = crypto.createHash("sha256").update(clientDataJSON).digest()
    const signature = crypto.sign("sha256", Buffer.concat([authenticatorData, clientDataHash]), privateKey)
    return { authenticatorData: bytesToHex(authenticatorData), clientDataJSON, signature: bytesToHex(signature) }
  }

  const sign = (hash: Hash): Hex => {
    const encoded = encodePasskeySignature(keyId, hash, assert(hash))
    if (encoded._tag === "Invalid") throw new Error(`${encoded.field}: ${encoded.message}`)
    return encoded.value
  }

  return { keyId, publicKey: key, spki, sec1, assert, sign }
}
