/**
 * Verifies that a signer signed a sign-in message. EOA signatures are checked
 * locally (ECDSA recovery); a smart-account signer (ERC-1271 / ERC-6492) needs a
 * chain reader, so the chain-backed layer verifies through a viem public client.
 */
import { Context, Effect, Layer } from "effect"
import type { Hex } from "viem"
import { verifyMessage } from "viem"
import type { PublicClient } from "viem"

export class SignatureVerifier extends Context.Service<SignatureVerifier, {
  readonly verify: (address: string, message: string, signature: string) => Effect.Effect<boolean>
}>()("das/auth/SignatureVerifier") {
  /** EOA signatures only, no chain needed. */
  static readonly layerLocal = Layer.succeed(SignatureVerifier, {
    verify: (address, message, signature) =>
      Effect.promise(() =>
        verifyMessage({ address: address as Hex, message, signature: signature as Hex }).catch(() => false)
      ).pipe(Effect.withSpan("SignatureVerifier.verify"))
  })

  /** EOA, ERC-1271 and ERC-6492 signatures through a public client of the account's chain. */
  static readonly layerChain = (client: PublicClient) =>
    Layer.succeed(SignatureVerifier, {
      verify: (address, message, signature) =>
        Effect.promise(() =>
          client.verifyMessage({ address: address as Hex, message, signature: signature as Hex }).catch(() => false)
        ).pipe(Effect.withSpan("SignatureVerifier.verify"))
    })
}
