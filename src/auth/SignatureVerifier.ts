/**
 * Verifies that a signer signed a sign-in message. EOA signatures are checked
 * locally (ECDSA recovery); a smart-account signer (ERC-1271 / ERC-6492) needs a
 * chain reader, so the chain-backed layer verifies through a viem public client.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import { Chains } from "../chain/Chains.ts"
import type { Hex } from "viem"
import { verifyMessage } from "viem"
import type { PublicClient } from "viem"

export class SignatureVerifier extends Context.Service<SignatureVerifier, {
  /** The chain whose accounts it verifies (and, unless configured, the chain a sign-in message names). */
  readonly chainId: number
  readonly verify: (address: string, message: string, signature: string) => Effect.Effect<boolean>
}>()("das/auth/SignatureVerifier") {
  /** EOA signatures only, no chain needed. */
  static readonly layerLocal = (chainId: number) => Layer.succeed(SignatureVerifier, {
    chainId,
    verify: (address, message, signature) =>
      Effect.promise(() =>
        verifyMessage({ address: address as Hex, message, signature: signature as Hex }).catch(() => false)
      ).pipe(Effect.withSpan("SignatureVerifier.verify"))
  })

  /** EOA, ERC-1271 and ERC-6492 signatures through a public client of the account's chain. */
  static readonly layerChain = (chainId: number, client: PublicClient) =>
    Layer.succeed(SignatureVerifier, {
      chainId,
      verify: (address, message, signature) =>
        Effect.promise(() =>
          client.verifyMessage({ address: address as Hex, message, signature: signature as Hex }).catch(() => false)
        ).pipe(Effect.withSpan("SignatureVerifier.verify"))
    })

  /** Through the chain sign-in names (`SIWE_CHAIN_ID`, default: the primary chain). */
  static readonly layerChains = Layer.unwrap(Effect.gen(function*() {
    const chains = yield* Chains
    const configured = yield* Config.option(Config.Int("SIWE_CHAIN_ID"))
    const net = Option.isSome(configured) ? chains.find(configured.value) ?? chains.primary : chains.primary
    return SignatureVerifier.layerChain(Option.getOrElse(configured, () => net.chainId), net.chain.client)
  }))
}
