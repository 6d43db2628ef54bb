/**
 * The pure part of Sign-In with Ethereum: parse the EIP-4361 message and check it against
 * what this service expects, each refusal with its reason. What viem's `validateSiweMessage`
 * covers (a valid address, version 1, the domain, the nonce's form, the expiration and
 * not-before times) is checked by it, one check at a time so the reason can be named; what it
 * does not (the URI, the chain id, `issuedAt`'s age) is checked here. The signature, with the
 * same checks again, is verified by viem's `verifySiweMessage` (SignatureVerifier.ts); the
 * nonce's single use by Sessions.
 */
import { parseSiweMessage, validateSiweMessage } from "viem/siwe"

export interface SiweExpectations {
  readonly domain: string
  readonly uri: string
  readonly chainId: number
  readonly now: Date
  /** How old `issuedAt` may be. */
  readonly maxAgeMs: number
  /** Tolerated clock skew for `issuedAt` and `notBefore` in the future. */
  readonly skewMs: number
}

export interface CheckedSiwe {
  readonly address: string
  readonly nonce: string
  readonly expiresAt: Date | undefined
  /** The instant to verify the message at: now, or its `notBefore` when that lies within the skew. */
  readonly verifyAt: Date
}

export type SiweCheck = { readonly ok: true; readonly value: CheckedSiwe } | { readonly ok: false; readonly reason: string }

const fail = (reason: string): SiweCheck => ({ ok: false, reason })

export const checkSiweMessage = (message: string, expect: SiweExpectations): SiweCheck => {
  const parsed = parseSiweMessage(message)
  const valid = (checks: Omit<Parameters<typeof validateSiweMessage>[0], "message">, fields = parsed) =>
    validateSiweMessage({ message: fields, time: expect.now, ...checks })
  if (parsed.address === undefined || !valid({}, { address: parsed.address })) {
    return fail("the message is not an EIP-4361 sign-in message (no valid address)")
  }
  // (A missing version is no version 1 either.)
  if (!valid({}, { address: parsed.address, version: parsed.version ?? ("none" as "1") })) {
    return fail("unsupported sign-in message version")
  }
  if (!valid({ domain: expect.domain }, { address: parsed.address, domain: parsed.domain })) {
    return fail(`the message is for domain ${parsed.domain ?? "(none)"}, expected ${expect.domain}`)
  }
  if (parsed.uri !== expect.uri) return fail(`the message is for URI ${parsed.uri ?? "(none)"}, expected ${expect.uri}`)
  if (parsed.chainId !== expect.chainId) return fail(`the message is for chain ${parsed.chainId ?? "(none)"}, expected ${expect.chainId}`)
  if (parsed.nonce === undefined || !valid({}, { address: parsed.address, nonce: parsed.nonce })) {
    return fail("the message has no nonce of 8 or more letters and digits")
  }
  if (parsed.issuedAt === undefined || Number.isNaN(parsed.issuedAt.getTime())) return fail("the message has no issuedAt")
  const now = expect.now.getTime()
  if (parsed.issuedAt.getTime() > now + expect.skewMs) return fail("the message is issued in the future")
  if (now - parsed.issuedAt.getTime() > expect.maxAgeMs) return fail("the message is too old")
  // viem refuses an unreadable time as it refuses an expired one: tell them apart for the reason.
  if (parsed.expirationTime !== undefined && Number.isNaN(parsed.expirationTime.getTime())) {
    return fail("the message has an unreadable expirationTime")
  }
  if (parsed.notBefore !== undefined && Number.isNaN(parsed.notBefore.getTime())) return fail("the message has an unreadable notBefore")
  if (!valid({}, { address: parsed.address, expirationTime: parsed.expirationTime })) return fail("the message has expired")
  // A not-before a little ahead of this clock (within the skew) is the signer's clock, not a future message.
  const verifyAt = parsed.notBefore !== undefined && parsed.notBefore.getTime() > now ? parsed.notBefore : expect.now
  if (
    parsed.notBefore !== undefined &&
    (parsed.notBefore.getTime() > now + expect.skewMs ||
      !valid({ time: verifyAt }, { address: parsed.address, notBefore: parsed.notBefore, expirationTime: parsed.expirationTime }))
  ) {
    return fail("the message is not valid yet")
  }
  return { ok: true, value: { address: parsed.address, nonce: parsed.nonce, expiresAt: parsed.expirationTime, verifyAt } }
}
