/**
 * Which webhook targets the service may call. Only http(s) URLs of at most 2 KB; a host
 * that is (or resolves to) a loopback, private, link-local, unique-local, CGNAT, multicast,
 * unspecified or otherwise reserved address is refused unless configuration allows it
 * (`WEBHOOKS_ALLOW_LOOPBACK` lets loopback through, for tests and local development;
 * `WEBHOOKS_ALLOW_PRIVATE` lets every range through, for deployments on a private network).
 *
 * A URL is stored as the URL parser serializes it (`normalizeTarget`): what is listed is what is
 * called; anything a parser would silently repair (control characters, whitespace, a backslash,
 * `http:/host`, credentials, a malformed authority) is refused instead.
 *
 * The check runs at registration (a 400) AND at every delivery, inside the connection's DNS
 * lookup (`guardedLookup`), so a name that later re-resolves to a refused address (DNS
 * rebinding) is still refused. Redirects are never followed.
 */
import { Config } from "effect"
import * as dns from "node:dns"
import * as net from "node:net"

export const MAX_URL_LENGTH = 2048

export interface TargetPolicy {
  readonly allowLoopback: boolean
  readonly allowPrivate: boolean
}

export const TargetPolicyConfig: Config.Config<TargetPolicy> = Config.all({
  allowLoopback: Config.Boolean("WEBHOOKS_ALLOW_LOOPBACK").pipe(Config.withDefault(false)),
  allowPrivate: Config.Boolean("WEBHOOKS_ALLOW_PRIVATE").pipe(Config.withDefault(false))
})

const v4ToInt = (ip: string) => ip.split(".").reduce((acc, p) => (acc << 8n) | BigInt(Number(p)), 0n)
const inV4 = (ip: string, base: string, bits: number) => {
  const shift = BigInt(32 - bits)
  return (v4ToInt(ip) >> shift) === (v4ToInt(base) >> shift)
}

/** The 8 groups of an IPv6 address as one bigint (handles `::` and an embedded IPv4 tail). */
const v6ToInt = (ip: string): bigint => {
  let s = ip.toLowerCase()
  const zone = s.indexOf("%")
  if (zone >= 0) s = s.slice(0, zone)
  const tail = s.match(/(\d+\.\d+\.\d+\.\d+)$/)
  if (tail !== null) {
    const v = v4ToInt(tail[1]!)
    s = s.slice(0, -tail[1]!.length) + ((v >> 16n).toString(16)) + ":" + ((v & 0xffffn).toString(16))
  }
  const [head, rest] = s.split("::") as [string, string | undefined]
  const h = head === "" ? [] : head.split(":")
  const r = rest === undefined || rest === "" ? [] : rest.split(":")
  const groups = rest === undefined ? h : [...h, ...Array(8 - h.length - r.length).fill("0"), ...r]
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || "0", 16)), 0n)
}
const inV6 = (value: bigint, prefix: string, bits: number) => {
  const shift = BigInt(128 - bits)
  return (value >> shift) === (v6ToInt(prefix) >> shift)
}

export type AddressClass = "public" | "loopback" | "private"

/** Classifies one literal IP address. Anything not plainly public is "private" (refused by default). */
export const classify = (ip: string): AddressClass => {
  if (net.isIPv4(ip)) {
    if (inV4(ip, "127.0.0.0", 8)) return "loopback"
    const refused: Array<[string, number]> = [
      ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["169.254.0.0", 16], ["172.16.0.0", 12],
      ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["198.51.100.0", 24],
      ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4]
    ]
    return refused.some(([b, n]) => inV4(ip, b, n)) ? "private" : "public"
  }
  if (net.isIPv6(ip)) {
    const v = v6ToInt(ip)
    if (v === 1n) return "loopback"
    if (v === 0n) return "private"
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible/NAT64 forms are judged as their IPv4 address.
    if (inV6(v, "::ffff:0:0", 96) || inV6(v, "64:ff9b::", 96) || inV6(v, "::", 96)) {
      const x = v & 0xffffffffn
      return classify(`${x >> 24n}.${(x >> 16n) & 255n}.${(x >> 8n) & 255n}.${x & 255n}`)
    }
    const refused: Array<[string, number]> = [
      ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8], ["2001:db8::", 32], ["100::", 64], ["2002::", 16],
      ["2001::", 32]
    ]
    return refused.some(([p, n]) => inV6(v, p, n)) ? "private" : "public"
  }
  return "private"
}

export const allowed = (ip: string, policy: TargetPolicy): boolean => {
  const c = classify(ip)
  return c === "public" || policy.allowPrivate || (c === "loopback" && policy.allowLoopback)
}

export type TargetShape =
  | { readonly _tag: "Ok"; readonly url: string }
  | { readonly _tag: "Refused"; readonly problem: string }

/** Control characters (C0, DEL, C1): a URL parser drops some of them silently, a header would carry others. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
/** Any whitespace (a parser trims it at the ends and drops tabs and newlines inside). */
const WHITESPACE = /\s/
/** `http://` or `https://`, then an authority: exactly two slashes, nothing a parser would repair. */
const SCHEME_AND_AUTHORITY = /^(https?):\/\/([^/?#]*)/i
/** A host name or IPv4 address, or a bracketed IPv6 address, then an optional port of digits. */
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[^\s:@[\]\\]+)(:\d{1,5})?$/i

/**
 * The URL as the service will call it, or why it is refused (a sentence for the 400). What is
 * stored and shown is the URL parser's own serialization (WHATWG `URL.href`: the scheme and host
 * lower-cased, a default port dropped, an empty path made `/`, characters percent-encoded), so
 * it is exactly what a delivery connects to. Refused before parsing, because a parser would
 * silently repair them into some other URL: control characters, whitespace anywhere, a
 * backslash, a scheme not followed by exactly `//`, credentials (`user:pw@`, even an empty
 * `@`), and an authority that is not `host[:port]` (an empty port, stray brackets).
 */
export const normalizeTarget = (raw: string): TargetShape => {
  const refused = (problem: string): TargetShape => ({ _tag: "Refused", problem })
  if (raw.length > MAX_URL_LENGTH) return refused(`A webhook URL may be at most ${MAX_URL_LENGTH} characters.`)
  if (CONTROL.test(raw)) return refused("A webhook URL may not contain control characters.")
  if (WHITESPACE.test(raw)) return refused("A webhook URL may not contain whitespace.")
  if (raw.includes("\\")) return refused("A webhook URL may not contain a backslash.")
  const head = SCHEME_AND_AUTHORITY.exec(raw)
  if (head === null) {
    return /^[a-z][a-z0-9+.-]*:/i.test(raw) && !/^https?:/i.test(raw)
      ? refused("A webhook URL must use http or https.")
      : refused("The webhook URL must start with http:// or https:// followed by its host.")
  }
  const authority = head[2]!
  if (authority.includes("@")) return refused("A webhook URL may not carry credentials.")
  if (authority === "") return refused("The webhook URL has no host.")
  if (!AUTHORITY.test(authority)) return refused("The webhook URL's host and port are malformed (expected host or host:port).")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return refused("The webhook URL is not a valid absolute URL.")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return refused("A webhook URL must use http or https.")
  if (url.username !== "" || url.password !== "") return refused("A webhook URL may not carry credentials.")
  if (url.hostname === "") return refused("The webhook URL has no host.")
  url.hash = ""
  if (url.href.length > MAX_URL_LENGTH) return refused(`A webhook URL may be at most ${MAX_URL_LENGTH} characters.`)
  return { _tag: "Ok", url: url.href }
}

/** Why a URL is refused (a sentence for the 400), or undefined when its shape is acceptable. */
export const shapeProblem = (raw: string): string | undefined => {
  const shape = normalizeTarget(raw)
  return shape._tag === "Refused" ? shape.problem : undefined
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "")

/**
 * Resolves the URL's host (every address) and refuses it if any address is in a refused range;
 * answers why it is refused, or undefined.
 */
export const checkTarget = async (raw: string, policy: TargetPolicy): Promise<string | undefined> => {
  const target = await acceptTarget(raw, policy)
  return target._tag === "Refused" ? target.problem : undefined
}

/** The URL as it will be called (`normalizeTarget`) once its host is allowed, or why it is refused. */
export const acceptTarget = async (raw: string, policy: TargetPolicy): Promise<TargetShape> => {
  const shape = normalizeTarget(raw)
  if (shape._tag === "Refused") return shape
  const problem = await hostProblem(shape.url, policy)
  return problem === undefined ? shape : { _tag: "Refused", problem }
}

const hostProblem = async (normalized: string, policy: TargetPolicy): Promise<string | undefined> => {
  const host = hostOf(new URL(normalized))
  let addresses: Array<string>
  if (net.isIP(host) !== 0) addresses = [host]
  else {
    try {
      addresses = (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address)
    } catch {
      return `The webhook host ${host} does not resolve.`
    }
  }
  if (addresses.length === 0) return `The webhook host ${host} does not resolve.`
  const bad = addresses.find((a) => !allowed(a, policy))
  return bad === undefined ? undefined : `The webhook host resolves to a refused address (${classify(bad)} range).`
}

/** A `lookup` for node:http(s) that refuses refused ranges at connect time (no DNS rebinding). */
export const guardedLookup = (policy: TargetPolicy): net.LookupFunction => (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true, verbatim: true }, (err, addresses) => {
    if (err !== null) return callback(err, "", 4)
    const list = addresses as unknown as Array<dns.LookupAddress>
    const bad = list.find((a) => !allowed(a.address, policy))
    if (bad !== undefined || list.length === 0) {
      return callback(Object.assign(new Error("webhook target resolves to a refused address"), { code: "EREFUSEDTARGET" }), "", 4)
    }
    if ((options as dns.LookupOptions).all === true) return (callback as unknown as (e: null, a: Array<dns.LookupAddress>) => void)(null, list)
    callback(null, list[0]!.address, list[0]!.family)
  })
}
