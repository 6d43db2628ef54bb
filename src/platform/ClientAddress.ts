/**
 * Who a request comes from, as the per-client shares count it (the edge's per-IP rate limits,
 * the notification streams, the long-poll waiters, the sponsorship quota per address): the
 * **peer key** (docs/edge.md, "Peers").
 *
 * - The client address is the TCP peer. Behind a reverse proxy, a peer listed in
 *   `TRUSTED_PROXIES` (addresses or CIDRs) may name the client in `X-Forwarded-For`: the list is
 *   read from the right and the first hop that is not a trusted proxy is the client (what a
 *   client writes itself stands to the left of what the proxies append, so it is never read
 *   unless every hop after it is ours). Anyone else's `X-Forwarded-For` is ignored (forgeable).
 * - The key groups what one party holds: an IPv4 address is one peer (an IPv4-mapped IPv6
 *   address, `::ffff:a.b.c.d`, is that IPv4 address); an IPv6 address is its network of
 *   `PEER_IPV6_PREFIX` bits (default 64: one subscriber's LAN, whose addresses are free to its
 *   holder), written `2001:db8:1:2::/64`.
 *
 * - A request the service sends itself on loopback on a caller's behalf (the `/mcp` tools call
 *   the service's own API: src/mcp/Http.ts) carries that caller's key in `X-DAS-On-Behalf`,
 *   proven by a secret this process draws at start (`onBehalfHeaders`): its shares count the
 *   caller, not 127.0.0.1. Anyone else's header (another peer, a wrong or missing secret) is
 *   ignored, as a forged `X-Forwarded-For` is.
 *
 * `undefined` outside a request (a background job): no per-client share applies.
 */
import { timingSafeEqual } from "node:crypto"
import { Config, ConfigProvider, Context, Effect, Layer, Option, Result } from "effect"
import { HttpServerRequest } from "effect/http"
import { IpNetwork, NetAddress } from "effect/net"

export interface PeerPolicyShape {
  /** Peers whose `X-Forwarded-For` names the client (the service's own reverse proxies). */
  readonly trustedProxies: ReadonlyArray<IpNetwork.IpNetwork>
  /** Bits of an IPv6 address that make one peer (64: a /64). */
  readonly ipv6PrefixLength: number
}

/** An address or a CIDR (`10.0.0.0/8`, `::1`, `[::1]`); host bits of a CIDR are cleared. */
export const parseNetwork = (input: string): IpNetwork.IpNetwork | undefined => {
  const [host = "", bits, extra] = input.trim().split("/")
  if (extra !== undefined) return undefined
  const address = parseIp(host)
  if (address === undefined) return undefined
  const width = NetAddress.width(address)
  const prefix = bits === undefined ? width : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
  if (!(prefix >= 0 && prefix <= width)) return undefined
  const network = IpNetwork.fromAddress(address, prefix)
  return Result.isSuccess(network) ? network.success : undefined
}

/**
 * A bare IP address (brackets, an IPv6 zone and an `IPv4:port` are dropped), IPv4-mapped IPv6
 * as IPv4; `undefined` for anything else (`unknown`, a host name).
 */
export const parseIp = (input: string): NetAddress.IpAddress | undefined => {
  let text = input.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)
  if (bracketed !== null) text = bracketed[1]!
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(text)) text = text.slice(0, text.indexOf(":"))
  const zone = text.indexOf("%")
  if (zone >= 0) text = text.slice(0, zone)
  if (text.length === 0 || text.length > 45) return undefined
  const ip = NetAddress.ipFromString(text)
  return Result.isSuccess(ip) ? NetAddress.toCanonical(ip.success) : undefined
}

const configError = (message: string) => Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message })))

const trustedProxiesConfig = Config.String("TRUSTED_PROXIES").pipe(
  Config.withDefault(""),
  Config.mapEffect((text) => {
    const entries = text.split(/[\s,]+/).filter((s) => s.length > 0)
    const networks: Array<IpNetwork.IpNetwork> = []
    for (const entry of entries) {
      const network = parseNetwork(entry)
      if (network === undefined) return configError(`TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR`)
      networks.push(network)
    }
    return Effect.succeed(networks)
  })
)

export const PeerPolicyConfig: Config.Config<PeerPolicyShape> = Config.all({
  trustedProxies: trustedProxiesConfig,
  ipv6PrefixLength: Config.Int("PEER_IPV6_PREFIX").pipe(
    Config.withDefault(64),
    Config.mapEffect((n) => n >= 1 && n <= 128 ? Effect.succeed(n) : configError(`PEER_IPV6_PREFIX must be 1..128, got ${n}`))
  )
})

/**
 * The policy of this service: provided at the top from `Config` (`PeerPolicy.layer`); without it
 * (a bare router in tests) nobody is a trusted proxy and IPv6 is grouped by /64.
 */
export const PeerPolicy = Context.Reference<PeerPolicyShape>("das/platform/PeerPolicy", {
  defaultValue: () => ({ trustedProxies: [], ipv6PrefixLength: 64 })
})

export const PeerPolicyLive = Layer.effect(PeerPolicy, Effect.gen(function*() {
  return yield* PeerPolicyConfig
}))

const isTrusted = (policy: PeerPolicyShape, address: NetAddress.IpAddress) =>
  policy.trustedProxies.some((network) => IpNetwork.contains(network, address))

/**
 * The client's address: the TCP peer `peer`, or, when it is a trusted proxy, the rightmost hop of
 * `forwardedFor` that is not one (every hop trusted: the leftmost). A hop that is not an address
 * stops the walk at the last trusted one read (the proxy's view cannot be checked past it).
 */
export const clientAddress = (
  policy: PeerPolicyShape,
  peer: string,
  forwardedFor: string | undefined
): NetAddress.IpAddress | undefined => {
  const direct = parseIp(peer)
  if (direct === undefined || forwardedFor === undefined || policy.trustedProxies.length === 0 || !isTrusted(policy, direct)) {
    return direct
  }
  const hops = forwardedFor.split(",")
  let client = direct
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseIp(hops[i]!)
    if (hop === undefined) return client
    client = hop
    if (!isTrusted(policy, hop)) return hop
  }
  return client
}

/** The peer key of an address: IPv4 as itself, IPv6 as its network of `ipv6PrefixLength` bits. */
export const peerKeyOf = (policy: PeerPolicyShape, address: NetAddress.IpAddress): string => {
  if (NetAddress.isIpv4Address(address)) return NetAddress.formatIp(address)
  const network = IpNetwork.fromAddress(address, policy.ipv6PrefixLength)
  return Result.isSuccess(network) ? IpNetwork.format(network.success) : NetAddress.formatIp(address)
}

/** The header of a request sent on a caller's behalf: `<this process's secret> <the caller's key>`. */
export const ON_BEHALF_HEADER = "x-das-on-behalf"
/** Drawn once per process: only this process's own loopback requests can name a caller. */
const ON_BEHALF_SECRET = Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join("")
/** Most characters of a caller's key carried on its behalf. */
const ON_BEHALF_MAX = 200

/**
 * The headers of a loopback request this process sends on a caller's behalf: its shares (rate
 * limits, sponsorship quota per address) count `key` (e.g. the caller's peer key and its signer).
 */
export const onBehalfHeaders = (key: string): Record<string, string> => ({ [ON_BEHALF_HEADER]: `${ON_BEHALF_SECRET} ${key.slice(0, ON_BEHALF_MAX)}` })

/** The caller a loopback request (TCP peer `peer`) of this process names (its secret first), else `undefined`. */
export const onBehalfOf = (peer: string, header: string | undefined): string | undefined => {
  const address = header === undefined ? undefined : parseIp(peer)
  if (header === undefined || address === undefined || !isLoopback(address)) return undefined
  const space = header.indexOf(" ")
  // Compared in constant time: behind a reverse proxy on this host every request is a loopback one.
  if (space < 0 || !sameSecret(header.slice(0, space))) return undefined
  const key = header.slice(space + 1)
  return key.length === 0 || key.length > ON_BEHALF_MAX ? undefined : key
}

const SECRET_BYTES = Buffer.from(ON_BEHALF_SECRET)
const sameSecret = (given: string) => {
  const bytes = Buffer.from(given)
  return bytes.length === SECRET_BYTES.length && timingSafeEqual(bytes, SECRET_BYTES)
}

const isLoopback = (address: NetAddress.IpAddress) =>
  NetAddress.isIpv4Address(address) ? NetAddress.formatIp(address).startsWith("127.") : NetAddress.formatIp(address) === "::1"

/** The peer key of a request (`undefined`: no peer address, e.g. a request built in a test). */
export const requestPeerKey = (policy: PeerPolicyShape, request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const peer = Option.getOrUndefined(request.remoteAddress)
  if (peer === undefined) return undefined
  // The service's own loopback call on a caller's behalf counts that caller.
  const behalf = onBehalfOf(peer, request.headers[ON_BEHALF_HEADER])
  if (behalf !== undefined) return behalf
  const address = clientAddress(policy, peer, request.headers["x-forwarded-for"])
  // Not an IP (a Unix socket's peer): the peer as the transport names it.
  return address === undefined ? peer : peerKeyOf(policy, address)
}

/** The peer key of the request being served; `undefined` outside a request. */
export const currentPeerKey: Effect.Effect<string | undefined> = Effect.flatMap(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) => Option.isNone(request) ? Effect.undefined : Effect.map(Effect.service(PeerPolicy), (policy) => requestPeerKey(policy, request.value))
)
