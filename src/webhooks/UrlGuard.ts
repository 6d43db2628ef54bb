/**
 * Which webhook targets the service may call. Only http(s) URLs of at most 2 KB; a host
 * that is (or resolves to) a loopback, private, link-local, unique-local, CGNAT, multicast,
 * unspecified or otherwise reserved address is refused unless configuration allows it
 * (`WEBHOOKS_ALLOW_LOOPBACK` lets loopback through, for tests and local development;
 * `WEBHOOKS_ALLOW_PRIVATE` lets every range through, for deployments on a private network).
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

/** Why a URL is refused (a sentence for the 400), or undefined when its shape is acceptable. */
export const shapeProblem = (raw: string): string | undefined => {
  if (raw.length > MAX_URL_LENGTH) return `A webhook URL may be at most ${MAX_URL_LENGTH} characters.`
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "The webhook URL is not a valid absolute URL."
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "A webhook URL must use http or https."
  if (url.username !== "" || url.password !== "") return "A webhook URL may not carry credentials."
  if (url.hostname === "") return "The webhook URL has no host."
  return undefined
}

const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "")

/** Resolves the URL's host (every address) and refuses it if any address is in a refused range. */
export const checkTarget = async (raw: string, policy: TargetPolicy): Promise<string | undefined> => {
  const problem = shapeProblem(raw)
  if (problem !== undefined) return problem
  const host = hostOf(new URL(raw))
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
