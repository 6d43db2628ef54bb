/**
 * Peers as networks (issue 41 item 4), over real HTTP on loopback. One IPv6 /64 is one peer:
 * loopback cannot bind twenty IPv6 addresses, so they arrive the way they do behind a reverse
 * proxy, from a trusted loopback proxy (`TRUSTED_PROXIES`) naming them in `X-Forwarded-For`; other
 * peers connect from their own loopback addresses (127.0.0.2, 127.0.0.3, ::1), and their
 * `X-Forwarded-For` is ignored. Shown for the notification streams (the attack of the issue:
 * twenty addresses of one /64 took 37 of 40 streams and the victim got 503), the sign-in rate
 * limit and the sponsorship quota per address. The key function itself:
 * test/platform/ClientAddress.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as http from "node:http"
import type { LocalAccount } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { signInMessage } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

interface From {
  /** The loopback address the connection is made from. */
  readonly localAddress?: string
  /** What the connection's `X-Forwarded-For` says. */
  readonly forwardedFor?: string
}

interface Answer {
  readonly status: number
  readonly body: any
}

/** One request from `from` (node:http: fetch cannot choose the local address). */
const call = (baseUrl: string, method: string, path: string, from: From, options: { token?: string; body?: unknown } = {}) =>
  new Promise<Answer>((resolve, reject) => {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body)
    const req = http.request(`${baseUrl}${path}`, {
      method,
      ...(from.localAddress === undefined ? {} : { localAddress: from.localAddress }),
      headers: {
        ...(from.forwardedFor === undefined ? {} : { "x-forwarded-for": from.forwardedFor }),
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
        ...(payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) })
      }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => text += chunk)
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.length === 0 ? undefined : JSON.parse(text) }))
    })
    req.on("error", reject)
    req.end(payload)
  })

/** A notification stream opened from `from`: its status, once it answered (200: once joined). */
const openStream = (baseUrl: string, token: string, from: From) =>
  new Promise<{ status: number; close: () => void }>((resolve, reject) => {
    const req = http.get(`${baseUrl}/notifications/stream`, {
      ...(from.localAddress === undefined ? {} : { localAddress: from.localAddress }),
      headers: { authorization: `Bearer ${token}`, ...(from.forwardedFor === undefined ? {} : { "x-forwarded-for": from.forwardedFor }) }
    }, (res) => {
      const close = () => req.destroy()
      if (res.statusCode !== 200) {
        res.resume()
        return resolve({ status: res.statusCode ?? 0, close })
      }
      let seen = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        seen += chunk
        if (seen.includes(": connected")) resolve({ status: 200, close })
      })
    })
    req.on("error", (e) => (e as { code?: string }).code === "ECONNRESET" ? undefined : reject(e))
  })

/** Sign-in from `from`: a nonce, the signed message, the session's token. */
const signInFrom = async (baseUrl: string, signer: LocalAccount, from: From) => {
  const nonce = await call(baseUrl, "POST", "/auth/nonce", from)
  if (nonce.status !== 200) return { status: nonce.status, token: undefined }
  const message = signInMessage(signer, nonce.body)
  const session = await call(baseUrl, "POST", "/auth/session", from, { body: { message, signature: await signer.signMessage({ message }) } })
  return { status: session.status, token: session.body.token as string }
}

const fresh = () => privateKeyToAccount(generatePrivateKey())
const proxied = (address: string): From => ({ localAddress: "127.0.0.1", forwardedFor: address })
/** The i-th address (1-based) of the attacker's /64. */
const attacker = (i: number) => proxied(`2001:db8:a77:ac4::${i.toString(16)}`)
/** Sign-ins spread over addresses of their own (the nonce limit is per peer). */
const signInElsewhere = (baseUrl: string, i: number) =>
  Effect.promise(async () => {
    const s = await signInFrom(baseUrl, fresh(), proxied(`198.51.100.${i}`))
    assert.strictEqual(s.status, 200)
    return s.token!
  })

const config = {
  TRUSTED_PROXIES: "127.0.0.1, ::1",
  // The shape: 40 streams in all, a peer's share 5 % (2).
  NOTIFICATIONS_STREAM_MAX_SUBSCRIBERS: "40",
  NOTIFICATIONS_STREAM_MAX_PER_ADDRESS: "2",
  NOTIFICATIONS_STREAM_MAX_PER_SIGNER: "16",
  RATE_LIMIT_NONCE_PER_MINUTE: "3",
  SPONSOR_ADDRESS_QUOTA_OPS: "2",
  SPONSOR_QUOTA_PERIOD: "1 hour"
}

describe("peers as networks", () => {
  it.live("twenty addresses of one IPv6 /64 are one peer: they get one share of the streams, and the victim gets its stream", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const tokens = yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i + 1), (i) => signInElsewhere(baseUrl, i))
      // The attack: each of the twenty addresses opens two streams, each with its own fresh key.
      const opened: Array<{ status: number; close: () => void }> = []
      for (let i = 1; i <= 20; i++) {
        for (const _ of [0, 1]) opened.push(yield* Effect.promise(() => openStream(baseUrl, tokens[i - 1]!, attacker(i))))
      }
      const ok = opened.filter((s) => s.status === 200).length
      assert.strictEqual(ok, 2, "the /64's share, not 40")
      assert.isTrue(opened.every((s) => s.status === 200 || s.status === 429), JSON.stringify(opened.map((s) => s.status)))

      // The victims: a direct client (127.0.0.2), and one behind the proxy from another /64.
      const victim = yield* signInElsewhere(baseUrl, 200)
      const direct = yield* Effect.promise(() => openStream(baseUrl, victim, { localAddress: "127.0.0.2" }))
      assert.strictEqual(direct.status, 200)
      const neighbour = yield* Effect.promise(() => openStream(baseUrl, victim, proxied("2001:db8:a77:ac5::1")))
      assert.strictEqual(neighbour.status, 200, "the next /64 is another peer")
      // The /64's share is its own, not the proxy's: the proxy's own requests are another peer.
      const proxyItself = yield* Effect.promise(() => openStream(baseUrl, victim, { localAddress: "127.0.0.1" }))
      assert.strictEqual(proxyItself.status, 200)

      // A client not among TRUSTED_PROXIES cannot name other addresses: 127.0.0.3 is one peer whatever it says.
      const liar = yield* Effect.forEach([1, 2, 3], (i) => Effect.promise(() => openStream(baseUrl, victim, { localAddress: "127.0.0.3", forwardedFor: `203.0.113.${i}` })))
      assert.deepStrictEqual(liar.map((s) => s.status), [200, 200, 429])
      for (const s of [...opened, direct, neighbour, proxyItself, ...liar]) s.close()
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config })))), { timeout: 120_000 })

  it.live("the sign-in rate limit is per peer: one /64 shares it, another /64 and an untrusted peer's forgeries do not escape theirs", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const nonces = (from: From, n: number) =>
        Effect.promise(() => Promise.all(Array.from({ length: n }, () => call(baseUrl, "POST", "/auth/nonce", from).then((a) => a.status))))
      // Three nonces a minute per peer: the /64's addresses together get three.
      const fromSlash64 = yield* Effect.forEach([1, 2, 3, 4, 5, 6], (i) => Effect.promise(() => call(baseUrl, "POST", "/auth/nonce", attacker(i)).then((a) => a.status)))
      assert.deepStrictEqual(fromSlash64, [200, 200, 200, 429, 429, 429])
      assert.deepStrictEqual(yield* nonces(proxied("2001:db8:a77:ac5::1"), 1), [200])
      // IPv4 is one peer per address: the next address has its own three.
      assert.deepStrictEqual(yield* nonces(proxied("198.51.100.1"), 1), [200])
      // An untrusted peer writing a new X-Forwarded-For on every request is still itself.
      const forged = yield* Effect.forEach([1, 2, 3, 4], (i) =>
        Effect.promise(() => call(baseUrl, "POST", "/auth/nonce", { localAddress: "127.0.0.4", forwardedFor: `203.0.113.${i}` }).then((a) => a.status)))
      assert.deepStrictEqual(forged, [200, 200, 200, 429])
      // The proxy itself (no X-Forwarded-For) is a peer of its own.
      assert.deepStrictEqual(yield* nonces({ localAddress: "127.0.0.1" }, 1), [200])
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config })))), { timeout: 120_000 })

  it.live("the sponsorship quota per address is per peer: fresh keys from one /64 share it", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const build = (token: string, from: From) =>
        Effect.promise(() =>
          call(baseUrl, "POST", "/delegations/build", from, {
            token,
            body: { name: "quota", kind: "agent", delegateeAddress: fresh().address, chainId: net.chainId, budgets: [{ token: { symbol: "USDC" }, amount: 1 }] }
          }))
      const tokens = yield* Effect.forEach([1, 2, 3, 4, 5], (i) => signInElsewhere(baseUrl, i))
      const fromSlash64: Array<Answer> = []
      for (let i = 1; i <= 4; i++) fromSlash64.push(yield* build(tokens[i - 1]!, attacker(i)))
      assert.deepStrictEqual(fromSlash64.map((a) => a.status), [200, 200, 429, 429], JSON.stringify(fromSlash64.map((a) => a.body?.error)))
      assert.strictEqual(fromSlash64[2]!.body.error.details.scope, "address")
      assert.isTrue(fromSlash64[0]!.body.simulation.gas.sponsored)
      // Another /64 has a quota of its own.
      const other = yield* build(tokens[4]!, proxied("2001:db8:a77:ac5::1"))
      assert.strictEqual(other.status, 200)
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config })))), { timeout: 120_000 })

  it.live("over IPv6 loopback: ::1 is a peer (the /64 ::/64), and a trusted ::1 proxy names IPv6 clients by their /64", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      assert.include(baseUrl, "[::1]")
      const tokens = yield* Effect.forEach([1, 2, 3, 4], (i) =>
        Effect.promise(async () => {
          const s = await signInFrom(baseUrl, fresh(), { forwardedFor: `198.51.100.${i}` })
          assert.strictEqual(s.status, 200)
          return s.token!
        }))
      // Straight from ::1 (no X-Forwarded-For): ::1's own share of two.
      const direct = yield* Effect.forEach(tokens.slice(0, 3), (t) => Effect.promise(() => openStream(baseUrl, t, {})))
      assert.deepStrictEqual(direct.map((s) => s.status), [200, 200, 429])
      // Through the ::1 proxy: three addresses of one /64, then another /64.
      const viaProxy = yield* Effect.forEach(
        ["2001:db8:6::1", "2001:db8:6::2", "2001:db8:6::3", "2001:db8:7::1"],
        (address, i) => Effect.promise(() => openStream(baseUrl, tokens[i]!, { forwardedFor: address }))
      )
      assert.deepStrictEqual(viaProxy.map((s) => s.status), [200, 200, 429, 200])
      for (const s of [...direct, ...viaProxy]) s.close()
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config, host: "::1" })))), { timeout: 120_000 })
})
