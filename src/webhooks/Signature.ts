/**
 * Webhook signatures, as Stripe does them: `X-Signature: t=<unix seconds>,v1=<hex>` where
 * v1 = HMAC-SHA256(secret, `${t}.${body}`). A receiver recomputes it over the raw body,
 * compares in constant time, and refuses a timestamp outside its tolerance (replays).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

export const SIGNATURE_HEADER = "x-signature"

export const newSecret = () => `whsec_${randomBytes(32).toString("base64url")}`

export const sign = (secret: string, timestamp: number, body: string): string =>
  createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")

export const signatureHeader = (secret: string, timestamp: number, body: string) =>
  `t=${timestamp},v1=${sign(secret, timestamp, body)}`

/** Verifies a header against the raw body (for receivers and tests); tolerance in seconds. */
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
