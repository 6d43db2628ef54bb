/**
 * Operations signed by a passkey (docs/account.md, "Signing with a passkey"). The client asks
 * its authenticator for an assertion whose challenge is the build's `webauthnChallenge` (the
 * base64url of `signingDigest`, the operation's EIP-712 digest) and relays the operation with
 * `signature: "0x"` and `webauthn: { keyId, authenticatorData, clientDataJSON, signature }`.
 * The relay finds the key the account holds under `keyId` on chain (`getKey`), checks the
 * assertion against it off chain (a bad one is a 400, never a bundler's AA24) and encodes the
 * account's signature (`encodePasskeySignature`); from there the operation is relayed like any other.
 */
import { Effect } from "effect"
import { type Address, hashTypedData } from "viem"
import { BadRequest, ServiceUnavailable } from "../api/Errors.ts"
import { fromWire } from "../builds/Wire.ts"
import type { ChainsShape } from "../chain/Chains.ts"
import { encodePasskeySignature, readPasskey, verifyPasskeyAssertion } from "../chain/Devices.ts"
import type { SignedUserOp, UserOperation } from "../domain/Operations.ts"

export const withPasskeySignature = (chains: ChainsShape, input: SignedUserOp) =>
  Effect.gen(function*() {
    const { webauthn, ...wire } = input
    if (webauthn === undefined) return wire satisfies UserOperation
    if (!/^0x0*$/.test(wire.signature)) {
      return yield* new BadRequest({
        message: "Give either `signature` or `webauthn`: a passkey-signed operation keeps `signature: \"0x\"`",
        details: { field: "signature" }
      })
    }
    const net = yield* chains.get(wire.chainId)
    const digest = yield* Effect.try({
      try: () => hashTypedData(net.accounts.userOperationTypedData(fromWire({ ...wire, signature: "0x" }))),
      catch: () => new BadRequest({ message: "The operation cannot be encoded (a nonce, gas or fee value out of range)" })
    })
    const key = yield* readPasskey(net.chain.client, wire.sender as Address, webauthn.keyId).pipe(
      Effect.mapError((e) => new ServiceUnavailable({ message: `Chain ${net.chainId} cannot be read: ${e.message}`, details: { chainId: net.chainId } }))
    )
    if (key === undefined) {
      return yield* new BadRequest({
        message: `The account ${wire.sender} holds no passkey with key id ${webauthn.keyId} on chain ${net.chainId}`,
        details: { field: "webauthn.keyId" }
      })
    }
    const assertion = {
      authenticatorData: webauthn.authenticatorData as `0x${string}`,
      clientDataJSON: webauthn.clientDataJSON,
      signature: webauthn.signature as `0x${string}`
    }
    const encoded = encodePasskeySignature(webauthn.keyId, digest, assertion)
    if (encoded._tag === "Invalid") {
      return yield* new BadRequest({ message: `webauthn.${encoded.field}: ${encoded.message}`, details: { field: `webauthn.${encoded.field}` } })
    }
    if (!verifyPasskeyAssertion(key, assertion)) {
      return yield* new BadRequest({
        message: "The passkey's signature does not verify against the key the account holds",
        details: { field: "webauthn.signature" }
      })
    }
    return { ...wire, signature: encoded.value } satisfies UserOperation
  }).pipe(Effect.withSpan("Relay.passkeySignature"))
