/**
 * Sign-In with Ethereum (EIP-4361) as the service expects it: the nonce's domain, URI and
 * chain, statement fixed; the signer's key signs the message and `POST /auth/session` answers
 * the session bearer.
 */
import type { Address } from "viem"
import { createSiweMessage } from "viem/siwe"
import type { SignInNonce } from "./wire.ts"

export const signInMessage = (signer: { readonly address: Address }, nonce: SignInNonce, issuedAt = new Date()) =>
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
