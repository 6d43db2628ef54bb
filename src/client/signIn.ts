/**
 * Client-side Sign-In with Ethereum: ask for a nonce, sign the EIP-4361 message
 * with the signer's key, exchange it for a session token.
 */
import { Effect } from "effect"
import type { LocalAccount } from "viem"
import { createSiweMessage } from "viem/siwe"
import { makeClient } from "./Client.ts"

export const signInMessage = (signer: LocalAccount, nonce: { nonce: string; domain: string; uri: string; chainId: number }, issuedAt = new Date()) =>
  createSiweMessage({
    address: signer.address,
    chainId: nonce.chainId,
    domain: nonce.domain,
    uri: nonce.uri,
    nonce: nonce.nonce,
    version: "1",
    issuedAt,
    statement: "Sign in to the delegated-authority service."
  })

export const signIn = (baseUrl: string, signer: LocalAccount) =>
  Effect.gen(function*() {
    const client = yield* makeClient({ baseUrl })
    const nonce = yield* client.auth.nonce()
    const message = signInMessage(signer, nonce)
    const signature = yield* Effect.promise(() => signer.signMessage({ message }))
    return yield* client.auth.signIn({ payload: { message, signature } })
  })
