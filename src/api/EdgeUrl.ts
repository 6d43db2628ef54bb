/**
 * The edge's URL rules as plain functions, shared by the Effect edge (`GlobalEnvelope.ts`)
 * and the routes the node server answers itself (`NodeServer.ts`).
 */

const V1 = "/v1"

/** The contract is served with and without the `/v1` prefix. */
export const stripVersionPrefix = (url: string): string =>
  url === V1 ? "/" : url.startsWith(`${V1}/`) || url.startsWith(`${V1}?`) ? url.slice(V1.length) || "/" : url

/** A URL whose every `%` escape is well-formed UTF-8 (anything else is refused with 400). */
export const isWellEncoded = (url: string): boolean => {
  if (!url.includes("%")) return true
  for (const part of url.split(/[/?&=;#]/)) {
    if (!part.includes("%")) continue
    try {
      decodeURIComponent(part)
    } catch {
      return false
    }
  }
  return true
}
