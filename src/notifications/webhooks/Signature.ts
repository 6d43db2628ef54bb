/**
 * Webhook signatures (docs/notifications.md, "Delivery").
 *
 * Standard Webhooks (https://www.standardwebhooks.com, the `standardwebhooks` package): headers
 * `webhook-id` (the delivery id, the same on every attempt), `webhook-timestamp` (unix seconds)
 * and `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`, where
 * the key is the secret's bytes: the secret is `whsec_` + base64 of 32 random bytes, so a
 * receiver verifies with the Standard Webhooks library of its language as is.
 *
 * Deprecated, still sent by default (`WEBHOOKS_LEGACY_SIGNATURE`): the former
 * `X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, keyed by the
 * whole secret string. Secrets issued before Standard Webhooks were base64url (no padding):
 * their bytes sign the new header all the same; a library that wants standard base64 gets
 * them after `-`→`+`, `_`→`/` and `=` padding, or a rotated secret (docs/notifications.md).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Webhook } from "standardwebhooks"

export const SIGNATURE_HEADER = "x-signature"

const PREFIX = "whsec_"

export const newSecret = () => `${PREFIX}${randomBytes(32).toString("base64")}`

/** The key bytes of a secret, issued in standard base64 or (before) base64url: Node decodes both. */
export const keyOf = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64")

/** The Standard Webhooks headers of one delivery attempt. */
export const standardHeaders = (secret: string, id: string, timestampSeconds: number, body: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": new Webhook(keyOf(secret), { format: "raw" }).sign(id, new Date(timestampSeconds * 1000), body)
})

/** The deprecated signature: HMAC keyed by the secret string itself. */
export const sign = (secret: string, timestamp: number, body: string): string =>
  createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")

export const signatureHeader = (secret: string, timestamp: number, body: string) =>
  `t=${timestamp},v1=${sign(secret, timestamp, body)}`

/** Verifies a deprecated `X-Signature` against the raw body (for receivers and tests); tolerance in seconds. */
export const verify = (secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean => {
  const parts = new Map<string, Array<string>>()
  for (const kv of header.split(",")) {
    const i = kv.indexOf("=")
    if (i <= 0) continue
    const k = kv.slice(0, i).trim()
    parts.set(k, [...(parts.get(k) ?? []), kv.slice(i + 1).trim()])
  }
  const t = Number(parts.get("t")?.[0])
  if (!Number.isSafeInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false
  const expected = Buffer.from(sign(secret, t, body), "hex")
  return (parts.get("v1") ?? []).some((v) => {
    const got = Buffer.from(v, "hex")
    return got.length === expected.length && timingSafeEqual(got, expected)
  })
}
