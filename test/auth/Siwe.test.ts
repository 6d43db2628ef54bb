/**
 * The sign-in message checks (src/auth/Siwe.ts), through viem's `validateSiweMessage` where it
 * covers them: each refusal names its reason; a not-before within the clock skew is accepted
 * (and verified at that instant), beyond it refused; and viem's `verifySiweMessage` accepts the
 * signature only at an instant the message is valid.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { createSiweMessage } from "viem/siwe"
import { SignatureVerifier } from "../../src/auth/SignatureVerifier.ts"
import { checkSiweMessage } from "../../src/auth/Siwe.ts"

const now = new Date("2026-11-26T12:00:00.000Z")
const expect = { domain: "app.test", uri: "https://app.test", chainId: 31337, now, maxAgeMs: 600_000, skewMs: 60_000 }
const signer = privateKeyToAccount(generatePrivateKey())
const message = (extra: Partial<Parameters<typeof createSiweMessage>[0]> = {}) =>
  createSiweMessage({
    address: signer.address,
    chainId: 31337,
    domain: "app.test",
    uri: "https://app.test",
    nonce: "abcdef0123456789",
    version: "1",
    issuedAt: new Date(now.getTime() - 1000),
    ...extra
  })
const reason = (text: string) => {
  const checked = checkSiweMessage(text, expect)
  return checked.ok ? "ok" : checked.reason
}

describe("sign-in message checks", () => {
  it("each refusal names its reason", () => {
    assert.strictEqual(reason(message()), "ok")
    assert.include(reason(message({ domain: "evil.test" })), "domain")
    assert.include(reason(message({ uri: "https://evil.test" })), "URI")
    assert.include(reason(message({ chainId: 1 })), "chain")
    assert.include(reason(message({ expirationTime: new Date(now.getTime() - 1) })), "expired")
    assert.include(reason(message({ issuedAt: new Date(now.getTime() - 3_600_000) })), "too old")
    assert.include(reason(message({ issuedAt: new Date(now.getTime() + 3_600_000) })), "future")
    assert.include(reason(message({ notBefore: new Date(now.getTime() + 120_000) })), "not valid yet")
    assert.include(reason(message().replace("Nonce: abcdef0123456789", "Nonce: short")), "nonce")
    assert.include(reason(message().replace("Version: 1", "Version: 2")), "version")
    assert.include(reason("hello"), "EIP-4361")
  })

  it.effect("a not-before within the clock skew is accepted, and the signature verifies at that instant", () =>
    Effect.gen(function*() {
      const notBefore = new Date(now.getTime() + 30_000)
      const text = message({ notBefore })
      const checked = checkSiweMessage(text, expect)
      assert.isTrue(checked.ok)
      const verifyAt = checked.ok ? checked.value.verifyAt : now
      assert.strictEqual(verifyAt.getTime(), notBefore.getTime())
      const signature = yield* Effect.promise(() => signer.signMessage({ message: text }))
      const verifier = yield* SignatureVerifier
      assert.isTrue(yield* verifier.verifySiwe({ message: text, signature, domain: "app.test", time: verifyAt }))
      // viem's own checks: not at an instant before notBefore, not for another domain, not another key's signature.
      assert.isFalse(yield* verifier.verifySiwe({ message: text, signature, domain: "app.test", time: now }))
      assert.isFalse(yield* verifier.verifySiwe({ message: text, signature, domain: "evil.test", time: verifyAt }))
      const forged = yield* Effect.promise(() => privateKeyToAccount(generatePrivateKey()).signMessage({ message: text }))
      assert.isFalse(yield* verifier.verifySiwe({ message: text, signature: forged, domain: "app.test", time: verifyAt }))
    }).pipe(Effect.provide(SignatureVerifier.layerLocal(31337))))
})
