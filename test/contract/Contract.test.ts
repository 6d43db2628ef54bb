/**
 * The HTTP contract end to end: every spec path is served (with and without
 * `/v1`), every protected endpoint refuses a missing or bad token with the 401
 * envelope, malformed input answers a 400 envelope and stores nothing, unknown
 * routes and defects answer envelopes, and every declared error of every
 * endpoint is one of the envelope codecs.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Api } from "../../src/Api.ts"
import * as Errors from "../../src/api/Errors.ts"
import { GlobalEnvelope } from "../../src/api/GlobalEnvelope.ts"
import { Authorization, InlineAuthorization } from "../../src/auth/Middleware.ts"
import { signIn } from "../../src/client/signIn.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { ServiceRoutes } from "../../src/api/Routes.ts"
import { serviceRoutes } from "../../src/Server.ts"

/** Every path of the spec, in OpenAPI form. */
const specPaths = [
  ["get", "/delegations"],
  ["post", "/delegations"],
  ["post", "/delegations/build"],
  ["get", "/delegations/{delegationId}"],
  ["post", "/delegations/{delegationId}/actions"],
  ["post", "/delegations/{delegationId}/freeze"],
  ["post", "/delegations/{delegationId}/unfreeze"],
  ["post", "/delegations/{delegationId}/revoke"],
  ["get", "/delegations/{delegationId}/policy-snapshots"],
  ["post", "/userops"],
  ["get", "/userops/{userOpId}"],
  ["get", "/activity"],
  ["get", "/activity/anchor"],
  ["get", "/activity/{eventId}"],
  ["get", "/notifications"],
  ["post", "/notifications/{notificationId}/read"],
  ["post", "/notifications/read-all"],
  ["get", "/marketplace/agents"],
  ["get", "/marketplace/agents/evaluator"],
  ["get", "/marketplace/agents/search"],
  ["get", "/marketplace/agents/{wallet}"],
  ["post", "/marketplace/agents/hire/build"],
  ["get", "/marketplace/agents/stream"],
  ["get", "/marketplace/jobs"],
  ["get", "/marketplace/jobs/{chainId}/{jobId}"],
  ["post", "/marketplace/jobs/create/build"],
  ["post", "/marketplace/jobs/fund/build"],
  ["get", "/marketplace/managed/connection"],
  ["post", "/marketplace/managed/connect"],
  ["get", "/marketplace/managed/connect/status"],
  ["post", "/marketplace/managed/deposit/build"],
  ["get", "/launchpad/tokens"],
  ["get", "/launchpad/tokens/{chain}/{address}/history"],
  ["post", "/auth/session"],
  ["get", "/account/rules"],
  ["post", "/account/rules/build"],
  ["get", "/account/devices"]
] as const

const publicPaths = new Set(["/marketplace/agents/stream", "/launchpad/tokens", "/launchpad/tokens/:chain/:address/history"])

/** Every endpoint of the API with its method, path and middlewares. */
const endpoints = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({ group, endpoint }))
)

const samplePath = (path: string) =>
  path
    .replace(":wallet", "0x1111111111111111111111111111111111111111")
    .replace(":chainId", "8453")
    .replace(":chain", "base")
    .replace(/:[A-Za-z]+/g, "x1")

const fetchJson = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const res = await fetch(url, init)
    const text = await res.text()
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text), type: res.headers.get("content-type") }
  })

const expectEnvelope = (body: unknown, code: string) => {
  const envelope = Schema.decodeUnknownSync(Errors.ErrorEnvelope)(body)
  assert.strictEqual(envelope.error.code, code)
  assert.isAbove(envelope.error.message.length, 0)
  assert.match(envelope.error.requestId ?? "", /^[0-9a-f]{32}$/)
  return envelope
}

const envelopeCodecs = new Map<Schema.Codec<unknown, unknown>, keyof typeof Errors.errorClasses>([
  [Errors.UnauthorizedError, "Unauthorized"],
  [Errors.BadRequestError, "BadRequest"],
  [Errors.NotFoundError, "NotFound"],
  [Errors.ConflictError, "Conflict"],
  [Errors.OutOfScopeError, "OutOfScope"],
  [Errors.NotImplementedError, "NotImplemented"],
  [Errors.UpstreamUnavailableError, "UpstreamUnavailable"],
  [Errors.UpstreamTimeoutError, "UpstreamTimeout"],
  [Errors.ServiceUnavailableError, "ServiceUnavailable"],
  [Errors.InternalErrorError, "InternalError"],
  [Errors.TooManyRequestsError, "TooManyRequests"],
  [Errors.PayloadTooLargeError, "PayloadTooLarge"],
  [Errors.UnsupportedMediaTypeError, "UnsupportedMediaType"]
] as Array<[Schema.Codec<unknown, unknown>, keyof typeof Errors.errorClasses]>)
/** Endpoints keep the declared schema's AST (wrapped in a new schema object), so compare ASTs. */
const envelopeAsts = new Set([...envelopeCodecs.keys()].map((c) => c.ast))

describe("declared errors", () => {
  it("every declared error of every endpoint (and of its middlewares) is an envelope codec", () => {
    for (const { endpoint } of endpoints) {
      const declared = [...endpoint.error, ...[...endpoint.middlewares].flatMap((m) => [...(m as any).error])]
      for (const schema of declared) {
        assert.isTrue(envelopeAsts.has(schema.ast), `${endpoint.method} ${endpoint.path} declares a non-envelope error`)
      }
      assert.isAtLeast(declared.length, 2, `${endpoint.method} ${endpoint.path} declares no errors`)
    }
  })

  it("every envelope codec has its status and encodes and decodes the envelope", () => {
    for (const [codec, tag] of envelopeCodecs) {
      const cls = Errors.errorClasses[tag]
      assert.strictEqual((codec.ast.annotations as any)?.httpApiStatus, cls.status, tag)
      const instance = tag === "OutOfScope"
        ? new Errors.OutOfScope({ message: "over", declineReason: "cap_exceeded", requestId: "r" })
        : new (cls as typeof Errors.NotFound)({ message: "m", details: { a: 1 } })
      const encoded = Schema.encodeUnknownSync(codec)(instance) as { error: Record<string, unknown> }
      assert.strictEqual(encoded.error.code, cls.code)
      assert.strictEqual(encoded.error.message, instance.message)
      assert.deepStrictEqual(Schema.decodeUnknownSync(Errors.ErrorEnvelope)(encoded), encoded)
      const decoded = Schema.decodeUnknownSync(codec)(encoded) as { _tag: string }
      assert.strictEqual(decoded._tag, tag)
    }
    const decline = Schema.encodeUnknownSync(Errors.OutOfScopeError)(
      new Errors.OutOfScope({ message: "over", declineReason: "cap_exceeded" })
    ) as { error: Record<string, unknown> }
    assert.strictEqual(decline.error.declineReason, "cap_exceeded")
  })

  it("statuses: 401 unauthorized, 400 bad request, 404, 409, 422 out_of_scope, 501", () => {
    assert.deepStrictEqual(
      [Errors.Unauthorized, Errors.BadRequest, Errors.NotFound, Errors.Conflict, Errors.OutOfScope, Errors.NotImplemented]
        .map((c) => [c.code, c.status]),
      [["unauthorized", 401], ["bad_request", 400], ["not_found", 404], ["conflict", 409], ["out_of_scope", 422], [
        "not_implemented",
        501
      ]]
    )
  })
})

describe("defects", () => {
  it.effect("a defect answers a 500 envelope with no internals", () =>
    Effect.gen(function*() {
      const App = Layer.mergeAll(
        HttpRouter.add("GET", "/boom", Effect.die(new Error("secret internal detail"))),
        HttpRouter.add("GET", "/ok", HttpServerResponse.text("ok")),
        GlobalEnvelope.pipe(Layer.provide(Layer.succeed(ServiceRoutes, serviceRoutes)))
      )
      const { handler, dispose } = HttpRouter.toWebHandler(App, { disableLogger: true })
      const res = yield* Effect.promise(() => handler(new Request("http://x/boom")))
      const text = yield* Effect.promise(() => res.text())
      yield* Effect.promise(dispose)
      assert.strictEqual(res.status, 500)
      assert.notInclude(text, "secret")
      assert.strictEqual(JSON.parse(text).error.code, "internal_error")
    }))
})

layer(TestServerLive(), { excludeTestServices: true })("over HTTP", (it) => {
  it.effect("/openapi.json lists every path of the spec", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const { body } = yield* fetchJson(`${baseUrl}/openapi.json`)
      for (const [method, path] of specPaths) {
        assert.isDefined(body.paths[path]?.[method], `${method.toUpperCase()} ${path} missing from /openapi.json`)
      }
      const docs = yield* Effect.promise(() => fetch(`${baseUrl}/docs`))
      assert.strictEqual(docs.status, 200)
      assert.include(docs.headers.get("content-type") ?? "", "text/html")
    }))

  it.effect("every protected endpoint answers 401 with the envelope without a token, or with a bad one", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      let protectedCount = 0
      for (const { endpoint } of endpoints) {
        // Either middleware: the session checked before the handler, or in the endpoint's own first statement.
        const isProtected = endpoint.middlewares.has(Authorization as never) || endpoint.middlewares.has(InlineAuthorization as never)
        assert.strictEqual(isProtected, !publicPaths.has(endpoint.path) && !endpoint.path.startsWith("/auth/nonce") &&
          !(endpoint.path === "/auth/session" && endpoint.method === "POST") && !endpoint.path.startsWith("/health"),
          `${endpoint.method} ${endpoint.path}`)
        if (!isProtected) continue
        protectedCount++
        for (const headers of [{}, { authorization: "Bearer not-a-session" }, { authorization: "Basic abc" }]) {
          for (const prefix of ["", "/v1"]) {
            const res = yield* fetchJson(`${baseUrl}${prefix}${samplePath(endpoint.path)}`, {
              method: endpoint.method,
              headers: { ...headers, "content-type": "application/json" },
              ...(endpoint.method === "GET" ? {} : { body: "{}" })
            })
            assert.strictEqual(res.status, 401, `${endpoint.method} ${prefix}${endpoint.path} ${JSON.stringify(headers)}`)
            expectEnvelope(res.body, "unauthorized")
          }
        }
      }
      assert.isAtLeast(protectedCount, 30)
    }))

  it.effect("public endpoints need no token", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const path of ["/launchpad/tokens", "/launchpad/tokens/base/0xabc/history", "/health/live", "/v1/health/live"]) {
        const res = yield* fetchJson(`${baseUrl}${path}`)
        assert.notStrictEqual(res.status, 401, path)
      }
    }))

  it.effect("unknown routes answer a 404 envelope, with and without /v1", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const path of ["/nope", "/v1/nope", "/v2/delegations", "/v1/v1"]) {
        const res = yield* fetchJson(`${baseUrl}${path}`)
        assert.strictEqual(res.status, 404, path)
        expectEnvelope(res.body, "not_found")
      }
      // `/v1` alone is `/` under the prefix (every path is served both ways): the landing page.
      const landing = yield* Effect.promise(() => fetch(`${baseUrl}/v1`))
      assert.strictEqual(landing.status, 200)
      assert.include(landing.headers.get("content-type") ?? "", "text/html")
    }))

  it.effect("malformed input answers a 400 envelope naming the failing path, and stores nothing", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const auth = { authorization: `Bearer ${session.token}`, "content-type": "application/json" }
      const cases: Array<[string, string, unknown, string]> = [
        ["POST", "/accounts", { label: "x".repeat(65) }, "body.label"],
        ["POST", "/accounts", { label: 42 }, "body.label"],
        ["GET", "/activity?limit=0", undefined, "query.limit"],
        ["GET", "/activity?limit=101", undefined, "query.limit"],
        ["GET", "/activity?limit=abc", undefined, "query.limit"],
        ["GET", "/activity?from=yesterday", undefined, "query.from"],
        ["GET", "/delegations?status=paused", undefined, "query.status"],
        ["GET", "/marketplace/agents?limit=500", undefined, "query.limit"],
        ["GET", "/marketplace/agents/search", undefined, "query.query"],
        ["GET", "/marketplace/agents/search?query=", undefined, "query.query"],
        ["GET", "/marketplace/agents/search?query=x&topK=0", undefined, "query.topK"],
        ["GET", "/marketplace/agents/not-a-wallet", undefined, "path.wallet"],
        ["GET", "/marketplace/jobs/abc/1", undefined, "path.chainId"],
        ["POST", "/delegations/build", { name: "x" }, "body"],
        ["POST", "/delegations/build", {
          name: "a",
          kind: "dApp",
          delegateeAddress: "0x123",
          chainId: 1,
          budgets: [{ token: { symbol: "USDC" }, amount: 1 }]
        }, "body.delegateeAddress"],
        ["POST", "/userops", { sender: "0x1" }, "body"],
        ["POST", "/marketplace/agents/hire/build", {
          agentWallet: "0x1111111111111111111111111111111111111111",
          chainId: 1,
          perJobBudget: -5,
          delegateeAddress: "0x1111111111111111111111111111111111111111"
        }, "body.perJobBudget"],
        ["GET", "/launchpad/tokens?pageSize=0", undefined, "query.pageSize"],
        ["GET", "/launchpad/tokens?pageSize=101", undefined, "query.pageSize"],
        ["GET", "/launchpad/tokens?page=0", undefined, "query.page"],
        ["GET", "/launchpad/tokens?chain=ethereum", undefined, "query.chain"],
        ["GET", "/launchpad/tokens?sort=price", undefined, "query.sort"],
        ["GET", "/launchpad/tokens/all/0xabc/history", undefined, "path.chain"],
        ["GET", "/notifications?unreadOnly=maybe", undefined, "query.unreadOnly"]
      ]
      for (const [method, path, body, failing] of cases) {
        const res = yield* fetchJson(`${baseUrl}${path}`, {
          method,
          headers: auth,
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        assert.strictEqual(res.status, 400, `${method} ${path}: ${JSON.stringify(res.body)}`)
        const envelope = expectEnvelope(res.body, "bad_request")
        const issues = (envelope.error.details as { issues: Array<{ path: string }> }).issues
        assert.isTrue(issues.some((i) => i.path.startsWith(failing)), `${method} ${path}: ${JSON.stringify(issues)}`)
      }
      // Not JSON at all.
      const garbled = yield* fetchJson(`${baseUrl}/accounts`, { method: "POST", headers: auth, body: "{not json" })
      assert.strictEqual(garbled.status, 400)
      expectEnvelope(garbled.body, "bad_request")
      // Nothing was stored by any of them.
      const api = yield* client(session.token)
      const accounts = yield* api.accounts.listAccounts()
      assert.deepStrictEqual(accounts.map((a) => a.index), [0, 0])
    }))

  it.effect("accounts: add one, list them, and another signer's account is never visible", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const alice = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const bob = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const aliceApi = yield* client(alice.token)
      const bobApi = yield* client(bob.token)
      const second = yield* aliceApi.accounts.createAccount({ payload: { label: "Savings" } })
      assert.strictEqual(second.index, 1)
      assert.strictEqual(second.label, "Savings")
      assert.notStrictEqual(second.address, alice.accounts[0]!.address)
      // A new index is made on every served chain, at one address; the answer is the primary chain's.
      const list = yield* aliceApi.accounts.listAccounts()
      assert.deepStrictEqual(list.map((a) => [a.index, a.chainId]), [[0, 31337], [0, 31338], [1, 31337], [1, 31338]])
      assert.strictEqual(list[2]!.address, list[3]!.address)
      // One chain only, and a chain the service does not serve: 400 naming the chains served.
      const onSecond = yield* aliceApi.accounts.createAccount({ payload: { chainId: 31338 } })
      assert.deepStrictEqual([onSecond.index, onSecond.chainId], [2, 31338])
      const unserved = yield* Effect.flip(aliceApi.accounts.createAccount({ payload: { chainId: 5 } }))
      assert.strictEqual(unserved._tag, "BadRequest")
      assert.include(unserved.message, "31337 (Local devnet), 31338 (Local devnet B)")
      // Concurrent adds never collide on an index.
      const many = yield* Effect.all(
        Array.from({ length: 8 }, () => aliceApi.accounts.createAccount({ payload: {} })),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(many.map((a) => a.index)).size, 8)
      assert.isTrue(many.every((a) => a.chainId === 31337))
      // Scoping: bob naming alice's account is an error, never ignored.
      const devices = yield* aliceApi.accounts.listDevices({ query: { accountId: second.id } })
      assert.strictEqual(devices[0]!.address, alice.signerAddress)
      const refused = yield* bobApi.accounts.listDevices({ query: { accountId: second.id } }).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "NotFound")
      const unknown = yield* bobApi.accounts.listDevices({ query: { accountId: "acc_nope" } }).pipe(Effect.flip)
      assert.strictEqual(unknown._tag, "NotFound")
    }))

  it.effect("log-out revokes the session", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const api = yield* client(session.token)
      yield* api.session.signOut()
      const error = yield* api.accounts.listAccounts().pipe(Effect.flip)
      assert.strictEqual(error._tag, "Unauthorized")
    }))

  it.effect("liveness and readiness", () =>
    Effect.gen(function*() {
      const api = yield* client()
      assert.deepStrictEqual(yield* api.live(), { status: "ok" })
      // Every served chain is probed (its RPC and bundler) and reported on its own.
      assert.deepStrictEqual(yield* api.ready(), {
        status: "ready",
        database: "ok",
        chains: [
          { chainId: 31337, name: "Local devnet", status: "ok", rpc: "ok", bundler: "ok" },
          { chainId: 31338, name: "Local devnet B", status: "ok", rpc: "ok", bundler: "ok" }
        ]
      })
    }))
})
