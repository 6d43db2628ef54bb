/**
 * Verifies a signed sign-in message: viem's `verifySiweMessage` (the message's domain, version,
 * nonce form and validity period again, then the signature: EOA, ERC-1271 or ERC-6492 through a
 * public client of the account's chain). The local layer checks EOA signatures only, with no
 * chain (viem's `validateSiweMessage` and `verifyMessage`).
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import type { Hex, PublicClient } from "viem"
import { verifyMessage } from "viem"
import { parseSiweMessage, validateSiweMessage, verifySiweMessage } from "viem/siwe"
import { Chains } from "../chain/Chains.ts"

export interface SiweVerification {
  readonly message: string
  readonly signature: string
  /** The domain the message must name. */
  readonly domain: string
  /** The instant the message must be valid at. */
  readonly time: Date
}

export class SignatureVerifier extends Context.Service<SignatureVerifier, {
  /** The chain whose accounts it verifies (and, unless configured, the chain a sign-in message names). */
  readonly chainId: number
  /** Whether the message is valid at `time` for `domain` and signed by the address it names. */
  readonly verifySiwe: (v: SiweVerification) => Effect.Effect<boolean>
}>()("das/auth/SignatureVerifier") {
  /** EOA signatures only, no chain needed. */
  static readonly layerLocal = (chainId: number) => Layer.succeed(SignatureVerifier, {
    chainId,
    verifySiwe: ({ message, signature, domain, time }) =>
      Effect.promise(async () => {
        const parsed = parseSiweMessage(message)
        if (parsed.address === undefined || !validateSiweMessage({ message: parsed, domain, time })) return false
        return verifyMessage({ address: parsed.address, message, signature: signature as Hex }).catch(() => false)
      }).pipe(Effect.withSpan("SignatureVerifier.verifySiwe"))
  })

  /** EOA, ERC-1271 and ERC-6492 signatures through a public client of the account's chain. */
  static readonly layerChain = (chainId: number, client: PublicClient) =>
    Layer.succeed(SignatureVerifier, {
      chainId,
      verifySiwe: ({ message, signature, domain, time }) =>
        Effect.promise(() =>
          verifySiweMessage(client, { message, signature: signature as Hex, domain, time }).catch(() => false)
        ).pipe(Effect.withSpan("SignatureVerifier.verifySiwe"))
    })

  /** Through the chain sign-in names (`SIWE_CHAIN_ID`, default: the primary chain). */
  static readonly layerChains = Layer.unwrap(Effect.gen(function*() {
    const chains = yield* Chains
    const configured = yield* Config.option(Config.Int("SIWE_CHAIN_ID"))
    const net = Option.isSome(configured) ? chains.find(configured.value) ?? chains.primary : chains.primary
    return SignatureVerifier.layerChain(Option.getOrElse(configured, () => net.chainId), net.chain.client)
  }))
}
