/**
 * The pure part of Sign-In with Ethereum: parse the EIP-4361 message and check it
 * against what this service expects. Signature and nonce checks happen in Sessions.
 */
import { isAddress } from "viem"
import { parseSiweMessage } from "viem/siwe"

export interface SiweExpectations {
  readonly domain: string
  readonly uri: string
  readonly chainId: number
  readonly now: Date
  /** How old `issuedAt` may be. */
  readonly maxAgeMs: number
  /** Tolerated clock skew for `issuedAt` in the future. */
  readonly skewMs: number
}

export interface CheckedSiwe {
  readonly address: string
  readonly nonce: string
  readonly expiresAt: Date | undefined
}

export type SiweCheck = { readonly ok: true; readonly value: CheckedSiwe } | { readonly ok: false; readonly reason: string }

const fail = (reason: string): SiweCheck => ({ ok: false, reason })

export const checkSiweMessage = (message: string, expect: SiweExpectations): SiweCheck => {
  const parsed = parseSiweMessage(message)
  if (parsed.address === undefined || !isAddress(parsed.address, { strict: false })) {
    return fail("the message is not an EIP-4361 sign-in message (no valid address)")
  }
  if (parsed.version !== "1") return fail("unsupported sign-in message version")
  if (parsed.domain !== expect.domain) return fail(`the message is for domain ${parsed.domain ?? "(none)"}, expected ${expect.domain}`)
  if (parsed.uri !== expect.uri) return fail(`the message is for URI ${parsed.uri ?? "(none)"}, expected ${expect.uri}`)
  if (parsed.chainId !== expect.chainId) return fail(`the message is for chain ${parsed.chainId ?? "(none)"}, expected ${expect.chainId}`)
  if (parsed.nonce === undefined) return fail("the message has no nonce")
  if (parsed.issuedAt === undefined || Number.isNaN(parsed.issuedAt.getTime())) return fail("the message has no issuedAt")
  const now = expect.now.getTime()
  if (parsed.issuedAt.getTime() > now + expect.skewMs) return fail("the message is issued in the future")
  if (now - parsed.issuedAt.getTime() > expect.maxAgeMs) return fail("the message is too old")
  // viem parses an unreadable time as an invalid Date; NaN compares false and would pass every check below.
  if (parsed.expirationTime !== undefined && Number.isNaN(parsed.expirationTime.getTime())) return fail("the message has an unreadable expirationTime")
  if (parsed.notBefore !== undefined && Number.isNaN(parsed.notBefore.getTime())) return fail("the message has an unreadable notBefore")
  if (parsed.expirationTime !== undefined && parsed.expirationTime.getTime() <= now) return fail("the message has expired")
  if (parsed.notBefore !== undefined && parsed.notBefore.getTime() > now + expect.skewMs) return fail("the message is not valid yet")
  return { ok: true, value: { address: parsed.address, nonce: parsed.nonce, expiresAt: parsed.expirationTime } }
}
