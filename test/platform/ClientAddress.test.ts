/**
 * The peer key (src/platform/ClientAddress.ts, issue 41 item 4) as pure functions: IPv4 by
 * address (IPv4-mapped IPv6 is IPv4), IPv6 by its /64 (or the configured prefix), and the client
 * address behind trusted proxies only (X-Forwarded-For read from the right). The same over real
 * HTTP: test/edge/peers.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit } from "effect"
import { NetAddress } from "effect/net"
import {
  clientAddress,
  ON_BEHALF_HEADER,
  onBehalfHeaders,
  onBehalfOf,
  parseIp,
  parseNetwork,
  PeerPolicyConfig,
  type PeerPolicyShape,
  peerKeyOf
} from "../../src/platform/ClientAddress.ts"

const policy = (trusted: ReadonlyArray<string> = [], ipv6PrefixLength = 64): PeerPolicyShape => ({
  trustedProxies: trusted.map((t) => parseNetwork(t)!),
  ipv6PrefixLength
})
const key = (address: string, p = policy()) => peerKeyOf(p, parseIp(address)!)
const client = (p: PeerPolicyShape, peer: string, xff: string | undefined) => {
  const a = clientAddress(p, peer, xff)
  return a === undefined ? undefined : NetAddress.formatIp(a)
}

describe("the peer key", () => {
  it("IPv4 is one peer per address; IPv4-mapped IPv6 is that IPv4 address", () => {
    assert.strictEqual(key("203.0.113.7"), "203.0.113.7")
    assert.strictEqual(key("::ffff:203.0.113.7"), "203.0.113.7")
    assert.strictEqual(key("::FFFF:cb00:7107"), "203.0.113.7")
    assert.notStrictEqual(key("203.0.113.7"), key("203.0.113.8"))
    assert.strictEqual(key("127.0.0.2"), "127.0.0.2")
  })

  it("every address of one IPv6 /64 is one peer, however it is written; the next /64 is another", () => {
    const keys = new Set(Array.from({ length: 20 }, (_, i) => key(`2001:db8:1:2::${(i + 1).toString(16)}`)))
    keys.add(key("2001:db8:1:2:ffff:ffff:ffff:ffff"))
    keys.add(key("2001:0DB8:0001:0002:0000:0000:0000:0001"))
    keys.add(key("[2001:db8:1:2::99]"))
    keys.add(key("fe80::1%eth0".replace("fe80::1", "2001:db8:1:2::1")))
    assert.deepStrictEqual([...keys], ["2001:db8:1:2::/64"])
    assert.strictEqual(key("2001:db8:1:3::1"), "2001:db8:1:3::/64")
    assert.strictEqual(key("::1"), "::/64")
  })

  it("the prefix is configurable: /48 groups a site, /128 is one address", () => {
    assert.strictEqual(key("2001:db8:1:2::1", policy([], 48)), key("2001:db8:1:ff::1", policy([], 48)))
    assert.strictEqual(key("2001:db8:1:2::1", policy([], 48)), "2001:db8:1::/48")
    assert.notStrictEqual(key("2001:db8:1:2::1", policy([], 128)), key("2001:db8:1:2::2", policy([], 128)))
    // IPv4 stays one peer per address whatever the IPv6 prefix.
    assert.strictEqual(key("198.51.100.1", policy([], 48)), "198.51.100.1")
  })

  it("not an address: no key of its own (the caller keeps the transport's name)", () => {
    for (const bad of ["unknown", "", "example.com", "1.2.3", "1.2.3.4.5", "::g", "2001:db8::1/64", `${"1".repeat(50)}`]) {
      assert.isUndefined(parseIp(bad), bad)
    }
  })
})

describe("the client address behind a proxy", () => {
  const proxies = policy(["127.0.0.1", "10.0.0.0/8", "::1"])

  it("an untrusted peer's X-Forwarded-For is ignored", () => {
    assert.strictEqual(client(proxies, "127.0.0.2", "2001:db8::1"), "127.0.0.2")
    assert.strictEqual(client(policy(), "127.0.0.1", "2001:db8::1"), "127.0.0.1", "nobody is trusted by default")
  })

  it("a trusted proxy names the client: the rightmost hop that is not a trusted proxy", () => {
    assert.strictEqual(client(proxies, "127.0.0.1", "2001:db8::1"), "2001:db8::1")
    // What the client wrote itself (6.6.6.6) stands left of what our proxies appended.
    assert.strictEqual(client(proxies, "127.0.0.1", "6.6.6.6, 198.51.100.7, 10.1.2.3"), "198.51.100.7")
    assert.strictEqual(client(proxies, "::1", " 198.51.100.7 ,10.0.0.9"), "198.51.100.7")
    // An IPv4-mapped peer is matched as IPv4.
    assert.strictEqual(client(proxies, "::ffff:127.0.0.1", "198.51.100.7"), "198.51.100.7")
    // Ports and brackets as some proxies write them.
    assert.strictEqual(client(proxies, "127.0.0.1", "[2001:db8::5]:443"), "2001:db8::5")
    assert.strictEqual(client(proxies, "127.0.0.1", "198.51.100.7:5555"), "198.51.100.7")
  })

  it("every hop trusted: the leftmost; a hop that is no address stops at the last trusted one read", () => {
    assert.strictEqual(client(proxies, "127.0.0.1", "10.0.0.5, 10.0.0.6"), "10.0.0.5")
    assert.strictEqual(client(proxies, "127.0.0.1", "198.51.100.7, unknown, 10.0.0.6"), "10.0.0.6")
    assert.strictEqual(client(proxies, "127.0.0.1", "unknown"), "127.0.0.1")
    assert.strictEqual(client(proxies, "127.0.0.1", ""), "127.0.0.1")
    assert.strictEqual(client(proxies, "127.0.0.1", undefined), "127.0.0.1")
  })
})

describe("the configuration", () => {
  const read = (env: Record<string, string>) =>
    Effect.runSyncExit(Effect.provide(Effect.gen(function*() {
      return yield* PeerPolicyConfig
    }), ConfigProvider.layer(ConfigProvider.fromUnknown(env))))

  it("TRUSTED_PROXIES: addresses and CIDRs, commas or spaces; PEER_IPV6_PREFIX 1..128 (default 64)", () => {
    const exit = read({ TRUSTED_PROXIES: "127.0.0.1, 10.0.0.0/8 ::1  fd00::/8" })
    assert.isTrue(Exit.isSuccess(exit))
    if (Exit.isSuccess(exit)) {
      assert.strictEqual(exit.value.trustedProxies.length, 4)
      assert.strictEqual(exit.value.ipv6PrefixLength, 64)
      assert.strictEqual(client(exit.value, "fd12::3", "2001:db8::1"), "2001:db8::1")
    }
    const none = read({})
    assert.isTrue(Exit.isSuccess(none) && none.value.trustedProxies.length === 0)
  })

  it("a wrong entry stops the service at start, naming it", () => {
    for (const env of [{ TRUSTED_PROXIES: "127.0.0.1, proxy.internal" }, { TRUSTED_PROXIES: "10.0.0.0/33" }, { PEER_IPV6_PREFIX: "0" }, { PEER_IPV6_PREFIX: "129" }]) {
      const exit = read(env)
      assert.isTrue(Exit.isFailure(exit), JSON.stringify(env))
    }
    const exit = read({ TRUSTED_PROXIES: "proxy.internal" })
    assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "proxy.internal")
  })
})

describe("a loopback call on a caller's behalf (the /mcp tools, h43)", () => {
  it("this process's own loopback call names its caller; a wrong secret, another peer or a bare header is ignored", () => {
    const header = onBehalfHeaders("203.0.113.7 mcp:0xabc")[ON_BEHALF_HEADER]!
    assert.strictEqual(onBehalfOf("127.0.0.1", header), "203.0.113.7 mcp:0xabc")
    assert.strictEqual(onBehalfOf("::1", header), "203.0.113.7 mcp:0xabc")
    assert.strictEqual(onBehalfOf("::ffff:127.0.0.1", header), "203.0.113.7 mcp:0xabc")
    // Not loopback: the same header from anyone else counts for nothing (the peer key stays the peer's).
    assert.isUndefined(onBehalfOf("203.0.113.9", header))
    // Forged: a secret this process never drew, no secret at all, an empty caller.
    assert.isUndefined(onBehalfOf("127.0.0.1", `${"0".repeat(64)} 198.51.100.1 mcp:0xdef`))
    assert.isUndefined(onBehalfOf("127.0.0.1", "198.51.100.1"))
    assert.isUndefined(onBehalfOf("127.0.0.1", `${header.split(" ")[0]} `))
    assert.isUndefined(onBehalfOf("127.0.0.1", undefined))
    // Bounded: a caller's key is cut to 200 characters when sent.
    assert.strictEqual(onBehalfOf("127.0.0.1", onBehalfHeaders("x".repeat(500))[ON_BEHALF_HEADER])!.length, 200)
  })
})
