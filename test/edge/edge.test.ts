/**
 * The HTTP edge over the real stack (Node server, router, HttpApi, PostgreSQL): every
 * refusal is the envelope, nothing a client sends reaches a 5xx, and the limits hold.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { codeOf, isEnvelope, portOf, rawExchange, request } from "./support.ts"

const MAX_BODY = 64 * 1024

const config = {
  HTTP_MAX_BODY_BYTES: String(MAX_BODY),
  HTTP_MAX_HEADER_BYTES: "8192",
  HTTP_MAX_URL_LENGTH: "2048",
  RATE_LIMIT_NONCE_PER_MINUTE: "4",
  RATE_LIMIT_BUILDS_PER_MINUTE: "3"
}

const session = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const s = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
  return { baseUrl, token: s.token, auth: { authorization: `Bearer ${s.token}` } }
})

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

layer(TestServerLive({ config }), { excludeTestServices: true })("the HTTP edge", (it) => {
  it.effect("NUL bytes and unpaired surrogates are refused at decode with 400, and nothing is stored", () =>
    Effect.gen(function*() {
      const { baseUrl, auth } = yield* session
      const sql = yield* SqlClient.SqlClient
      const before = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts`
      const label = yield* request(`${baseUrl}/accounts`, json({ label: "a\u0000b" }, auth))
      assert.strictEqual(label.status, 400)
      assert.strictEqual(codeOf(label.json), "bad_request")
      // Refused by the wire Schema (the failing field named), not by PostgreSQL.
      assert.include(JSON.stringify(label.json), "body.label")
      const surrogate = yield* request(`${baseUrl}/accounts`, json('{"label":"a\\ud800b"}', auth))
      assert.strictEqual(surrogate.status, 400)
      const after = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts`
      assert.strictEqual(after[0]!.n, before[0]!.n)
      // A well-formed pair (an emoji) is text like any other.
      const emoji = yield* request(`${baseUrl}/accounts`, json({ label: "savings \u{1F4B0}" }, auth))
      assert.strictEqual(emoji.status, 200)

      const build = yield* request(
        `${baseUrl}/delegations/build`,
        json({
          name: "x\u0000",
          kind: "dApp",
          delegateeAddress: "0x" + "11".repeat(20),
          chainId: 31337,
          budgets: [{ token: { symbol: "USDC" }, amount: 1 }]
        }, auth)
      )
      assert.strictEqual(build.status, 400)
      for (
        const path of [
          "/delegations/a%00b",
          "/activity?status=%00",
          "/activity?delegationId=x%00",
          "/activity/a%00",
          "/userops/%00",
          "/delegations?accountId=%00"
        ]
      ) {
        const res = yield* request(`${baseUrl}${path}`, { headers: auth })
        assert.strictEqual(res.status, 400, path)
        assert.isTrue(isEnvelope(res.json), path)
      }
    }))

  it.effect("a body over the limit is 413, declared or streamed; a non-JSON body is 415; both are envelopes", () =>
    Effect.gen(function*() {
      const { baseUrl, auth } = yield* session
      const big = JSON.stringify({ label: "x".repeat(MAX_BODY * 2) })
      const declared = yield* request(`${baseUrl}/accounts`, json(big, auth))
      assert.strictEqual(declared.status, 413)
      assert.strictEqual(codeOf(declared.json), "payload_too_large")

      // Chunked (no Content-Length): the limit holds while the body streams in.
      const chunk = new TextEncoder().encode("x".repeat(16 * 1024))
      let sent = 0
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"label":"'))
        },
        pull(controller) {
          if (sent++ < 64) controller.enqueue(chunk)
          else controller.close()
        }
      })
      const streamed = yield* request(`${baseUrl}/accounts`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: stream,
        duplex: "half"
      } as RequestInit)
      assert.strictEqual(streamed.status, 413)
      assert.strictEqual(codeOf(streamed.json), "payload_too_large")

      const text = yield* request(`${baseUrl}/accounts`, {
        method: "POST",
        headers: { "content-type": "text/plain", ...auth },
        body: "label=x"
      })
      assert.strictEqual(text.status, 415)
      assert.strictEqual(codeOf(text.json), "unsupported_media_type")
      assert.match(String((text.json as { error: { requestId?: string } }).error.requestId), /^[0-9a-f]{32}$/)
    }))

  it.effect("405 with Allow, OPTIONS and HEAD are answered; unknown paths are 404 envelopes", () =>
    Effect.gen(function*() {
      const { baseUrl, auth } = yield* session
      const put = yield* request(`${baseUrl}/accounts`, { method: "PUT", headers: auth })
      assert.strictEqual(put.status, 405)
      assert.strictEqual(codeOf(put.json), "method_not_allowed")
      assert.strictEqual(put.headers.get("allow"), "GET, POST, HEAD, OPTIONS")
      // Refused at the edge, still with the request's trace id (the edge looks it up only when refusing).
      assert.match(String((put.json as { error: { requestId?: string } }).error.requestId), /^[0-9a-f]{32}$/)
      const del = yield* request(`${baseUrl}/v1/delegations/abc`, { method: "DELETE", headers: auth })
      assert.strictEqual(del.status, 405)

      const options = yield* request(`${baseUrl}/delegations/abc/revoke`, { method: "OPTIONS" })
      assert.strictEqual(options.status, 204)
      assert.strictEqual(options.headers.get("allow"), "POST, OPTIONS")

      const head = yield* request(`${baseUrl}/launchpad/tokens/base/0xabc/history`, { method: "HEAD" })
      assert.notStrictEqual(head.status, 404)
      assert.strictEqual(head.text, "")
      const live = yield* request(`${baseUrl}/health/live`, { method: "HEAD" })
      assert.strictEqual(live.status, 200)

      const unknown = yield* request(`${baseUrl}/nope`, { method: "OPTIONS" })
      assert.strictEqual(unknown.status, 404)
      assert.strictEqual(codeOf(unknown.json), "not_found")
    }))

  it.effect("long or badly encoded path parameters are 400; a long URL is 414; huge headers are 431, all envelopes", () =>
    Effect.gen(function*() {
      const { baseUrl, auth } = yield* session
      for (const path of ["/delegations/" + "a".repeat(101), "/delegations/" + "a".repeat(300) + "/freeze"]) {
        const res = yield* request(`${baseUrl}${path}`, { method: path.endsWith("freeze") ? "POST" : "GET", headers: auth })
        assert.strictEqual(res.status, 400, path)
        assert.strictEqual(codeOf(res.json), "bad_request")
      }
      for (const path of ["/delegations/%E0%A4%A", "/delegations/%ZZ", "/activity?cursor=%C3%28", "/marketplace/agents/%FF"]) {
        const res = yield* request(`${baseUrl}${path}`, { headers: auth })
        assert.strictEqual(res.status, 400, path)
        assert.isTrue(isEnvelope(res.json), path)
      }
      const freeze = yield* request(`${baseUrl}/delegations/unknown/freeze`, { method: "POST", headers: auth })
      assert.strictEqual(freeze.status, 400)

      const long = yield* request(`${baseUrl}/activity?cursor=${"a".repeat(3000)}`, { headers: auth })
      assert.strictEqual(long.status, 414)
      assert.strictEqual(codeOf(long.json), "uri_too_long")

      const port = portOf(baseUrl)
      const headers = yield* rawExchange(
        port,
        `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(10_000)}\r\nConnection: close\r\n\r\n`
      )
      assert.strictEqual(headers.status, 431)
      assert.strictEqual(codeOf(JSON.parse(headers.body)), "headers_too_large")
      const connect = yield* rawExchange(port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
      assert.strictEqual(connect.status, 405)
      assert.strictEqual(codeOf(JSON.parse(connect.body)), "method_not_allowed")
      const trace = yield* rawExchange(port, "TRACE /accounts HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
      assert.strictEqual(trace.status, 405)
      const garbage = yield* rawExchange(port, "NOT HTTP AT ALL\r\n\r\n")
      assert.strictEqual(garbage.status, 400)
      assert.strictEqual(codeOf(JSON.parse(garbage.body)), "bad_request")
    }))

})

// A server of its own: the tests above spend sign-in nonces.
layer(TestServerLive({ config: { ...config, RATE_LIMIT_SESSION_PER_MINUTE: "3" } }), { excludeTestServices: true })("rate limits", (it) => {
  it.effect("sign-in nonces are rate limited per IP, builds per signer: 429 with Retry-After", () =>
    Effect.gen(function*() {
      const { baseUrl, auth } = yield* session // used one nonce of 4
      const statuses: Array<number> = []
      const remaining: Array<string | null> = []
      let limited: { status: number; headers: Headers; json: unknown } | undefined
      for (let i = 0; i < 4; i++) {
        const res = yield* request(`${baseUrl}/auth/nonce`, { method: "POST" })
        statuses.push(res.status)
        remaining.push(res.headers.get("ratelimit-remaining"))
        assert.strictEqual(res.headers.get("ratelimit-limit"), "4")
        assert.isAtLeast(Number(res.headers.get("ratelimit-reset")), 1)
        if (res.status === 429) limited = res
      }
      assert.deepStrictEqual(statuses.slice(0, 3), [200, 200, 200])
      assert.strictEqual(statuses[3], 429)
      // RateLimit-* (draft-ietf-httpapi-ratelimit-headers) on every answer of a limited endpoint.
      assert.deepStrictEqual(remaining, ["2", "1", "0", "0"])
      assert.strictEqual(codeOf(limited!.json), "rate_limited")
      const retryAfter = Number(limited!.headers.get("retry-after"))
      assert.isAtLeast(retryAfter, 1)
      assert.isAtLeast(Number(limited!.headers.get("ratelimit-reset")), retryAfter)
      assert.strictEqual((limited!.json as { error: { details: { retryAfterSeconds: number } } }).error.details.retryAfterSeconds, retryAfter)

      // Sign-in attempts: 3 per minute per IP, one spent by the sign-in above; refused before any checking.
      const attempts: Array<number> = []
      for (let i = 0; i < 3; i++) {
        const res = yield* request(`${baseUrl}/auth/session`, json({ message: "not a SIWE message", signature: "0x00" }))
        attempts.push(res.status)
        if (res.status === 429) assert.isAtLeast(Number(res.headers.get("retry-after")), 1)
      }
      assert.deepStrictEqual(attempts, [400, 400, 429])

      // Builds: 3 per minute for this signer, whatever the endpoint (404s count: the limit comes first).
      const builds: Array<number> = []
      for (const path of ["/delegations/nope/actions", "/marketplace/jobs/create/build", "/delegations/nope/actions", "/delegations/build"]) {
        const res = yield* request(`${baseUrl}${path}`, json({ recipient: "0x" + "22".repeat(20), amount: 1, intentType: "account_freeze" }, auth))
        builds.push(res.status)
        if (res.status === 429) assert.isAtLeast(Number(res.headers.get("retry-after")), 1)
      }
      assert.notInclude(builds.slice(0, 3), 429)
      assert.strictEqual(builds[3], 429)
      // The kill-switches stay buildable past the limit (they answer for themselves: here, 404 / a build).
      const revoke = yield* request(`${baseUrl}/delegations/nope/revoke`, { method: "POST", headers: auth })
      assert.strictEqual(revoke.status, 404)
      const freeze = yield* request(`${baseUrl}/account/rules/build`, json({ intentType: "account_freeze", accountId: "nope" }, auth))
      assert.notStrictEqual(freeze.status, 429)
      // Without a valid session the endpoint's own 401 answers, not the limit.
      const anon = yield* request(`${baseUrl}/delegations/build`, json({}))
      assert.strictEqual(anon.status, 401)
      // The bearer challenge (RFC 6750): none presented, or an invalid one.
      assert.strictEqual(anon.headers.get("www-authenticate"), "Bearer")
      const forged = yield* request(`${baseUrl}/delegations/build`, json({}, { authorization: "Bearer not-a-session" }))
      assert.strictEqual(forged.status, 401)
      assert.strictEqual(forged.headers.get("www-authenticate"), "Bearer error=\"invalid_token\"")
    }))
})
