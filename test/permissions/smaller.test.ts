/**
 * The smaller ones of issue 41 (item 6), over real HTTP: a revoke of a permission context that is
 * not the caller's is the JSON-RPC error -32001 (HTTP 200), never a 500; JSON-RPC ids come back
 * exactly as sent (strings, integers above 2^53); signing another owner's account delegation names
 * no account of theirs; `GET /docs/assets/<unknown>` is the 404 envelope.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { encodeAbiParameters, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { encodeAnswer, rawNumericId } from "../../src/permissions/JsonRpc.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const signedIn = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const s = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
  return { token: s.token, accountId: s.accounts[0]!.id, api: yield* client(s.token) }
})

const post = (path: string, token: string, body: string) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    Effect.promise(async () => {
      const r = await fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body
      })
      return { status: r.status, text: await r.text() }
    }))

/** A permission context (ERC-7710 `Delegation[]`) of a grant by someone else's account. */
const foreignContext = (): Hex =>
  encodeAbiParameters(
    [{
      type: "tuple[]",
      components: [
        { name: "delegate", type: "address" },
        { name: "delegator", type: "address" },
        { name: "authority", type: "bytes32" },
        { name: "caveats", type: "tuple[]", components: [{ name: "enforcer", type: "address" }, { name: "terms", type: "bytes" }, { name: "args", type: "bytes" }] },
        { name: "salt", type: "uint256" },
        { name: "signature", type: "bytes" }
      ]
    }],
    [[{
      delegate: privateKeyToAccount(generatePrivateKey()).address,
      delegator: privateKeyToAccount(generatePrivateKey()).address,
      authority: `0x${"ff".repeat(32)}`,
      caveats: [],
      salt: 1n,
      signature: `0x${"11".repeat(65)}`
    }]]
  )

describe("JSON-RPC ids as the body wrote them", () => {
  it("the raw numeric id of the body's top level (the last, as JSON.parse keeps)", () => {
    assert.strictEqual(rawNumericId(`{"jsonrpc":"2.0","id":9007199254740993,"method":"m"}`), "9007199254740993")
    assert.strictEqual(rawNumericId(` { "params": {"id": 1, "x": [{"id":2}]}, "id" : -123456789012345678901234 } `), "-123456789012345678901234")
    assert.strictEqual(rawNumericId(`{"id":1,"id":2.50}`), "2.50")
    assert.strictEqual(rawNumericId(`{"id":"9007199254740993"}`), undefined)
    assert.strictEqual(rawNumericId(`{"method":"id","params":["\\"id\\":5"],"id":null}`), undefined)
    assert.strictEqual(rawNumericId(`{"a":"}{","id":7}`), "7")
  })
  it("the answer carries it exactly; a string or a safe id is left as it is", () => {
    const answer = { jsonrpc: "2.0" as const, id: 9007199254740992, result: { id: "\u0000id" } }
    assert.strictEqual(encodeAnswer(answer, "9007199254740993"), `{"jsonrpc":"2.0","id":9007199254740993,"result":{"id":"\\u0000id"}}`)
    assert.strictEqual(encodeAnswer({ jsonrpc: "2.0", id: "x", result: 1 }, "5"), `{"jsonrpc":"2.0","id":"x","result":1}`)
    assert.strictEqual(encodeAnswer({ jsonrpc: "2.0", id: 5, result: 1 }, "6"), `{"jsonrpc":"2.0","id":5,"result":1}`)
  })
})

layer(TestServerLive({ config: { PERMISSIONS_APPROVAL_WAIT: "1 second" } }), { timeout: Duration.seconds(120), excludeTestServices: true })(
  "the smaller ones (issue 41 item 6)",
  (it) => {
    it.effect("a revoke of another user's permission context is -32001 with HTTP 200, never a 500", () =>
      Effect.gen(function*() {
        const mallory = yield* signedIn
        const context = foreignContext()
        for (const params of [{ permissionContext: context }, [{ permissionContext: context }]]) {
          const r = yield* post("/wallet", mallory.token, JSON.stringify({ jsonrpc: "2.0", id: 41, method: "wallet_revokeExecutionPermission", params }))
          assert.strictEqual(r.status, 200, r.text)
          const body = JSON.parse(r.text)
          assert.strictEqual(body.id, 41)
          assert.strictEqual(body.error.code, -32001)
          assert.isString(body.error.message)
          assert.isNotEmpty(body.error.message)
          assert.match(body.error.data.field, /^params(\[0\])?\.permissionContext$/)
        }
        // The HTTP twin: the 404 envelope.
        const twin = yield* post("/permissions/revoke", mallory.token, JSON.stringify({ permissionContext: context }))
        assert.strictEqual(twin.status, 404)
        assert.strictEqual(JSON.parse(twin.text).error.code, "not_found")
      }))

    it.effect("JSON-RPC ids are echoed exactly: integers above 2^53, negative and fractional numbers, strings", () =>
      Effect.gen(function*() {
        const me = yield* signedIn
        const ids = ["9007199254740993", "123456789012345678901234567890", "-9007199254740995", "1.50", "0", "\"9007199254740993\"", "\"é \\\"quoted\\\" ☃\""]
        for (const id of ids) {
          for (const method of ["wallet_getSupportedExecutionPermissions", "wallet_noSuchMethod"]) {
            const r = yield* post("/wallet", me.token, `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":[]}`)
            assert.strictEqual(r.status, 200, r.text)
            assert.include(r.text, `"id":${id}`, `${method} ${id}: ${r.text.slice(0, 200)}`)
            const body = JSON.parse(r.text)
            assert.strictEqual(body.jsonrpc, "2.0")
            assert.isTrue(method.includes("noSuch") ? body.error.code === -32601 : body.result !== undefined, r.text.slice(0, 200))
          }
        }
      }))

    it.effect("signing another owner's account delegation names no account of theirs", () =>
      Effect.gen(function*() {
        const alice = yield* signedIn
        const mallory = yield* signedIn
        const hers = yield* alice.api.accounts.buildAccountDelegation({ payload: {} })
        const r = yield* post("/account/rules/delegations/sign", mallory.token, JSON.stringify({ delegationHash: hers.delegationHash, signature: `0x${"11".repeat(65)}` }))
        const nothing = yield* post("/account/rules/delegations/sign", mallory.token, JSON.stringify({ delegationHash: `0x${"ab".repeat(32)}`, signature: `0x${"11".repeat(65)}` }))
        assert.strictEqual(r.status, 404, r.text)
        assert.notInclude(r.text, alice.accountId)
        // Answered as a hash that names nothing at all: the two are indistinguishable.
        const strip = (text: string) => ({ ...JSON.parse(text).error, requestId: undefined })
        assert.deepStrictEqual(strip(r.text), strip(nothing.text))
        // Naming her account outright is refused without echoing it either.
        const { baseUrl } = yield* TestServer
        const rules = yield* Effect.promise(() =>
          fetch(`${baseUrl}/account/rules?accountId=${alice.accountId}`, { headers: { authorization: `Bearer ${mallory.token}` } })
            .then(async (x) => ({ status: x.status, text: await x.text() })))
        assert.strictEqual(rules.status, 404)
        assert.notInclude(rules.text, alice.accountId)
      }))

    it.effect("GET /docs/assets/<unknown> is the 404 envelope", () =>
      Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        for (const path of ["/docs/assets/nothing.woff2", "/docs/assets/..%2Fpackage.json", "/v1/docs/assets/x"]) {
          const r = yield* Effect.promise(() => fetch(`${baseUrl}${path}`).then(async (x) => ({ status: x.status, type: x.headers.get("content-type"), text: await x.text() })))
          assert.strictEqual(r.status, 404, path)
          assert.include(r.type ?? "", "application/json", path)
          const body = JSON.parse(r.text)
          assert.strictEqual(body.error.code, "not_found", path)
          assert.isString(body.error.requestId)
        }
      }))
  }
)
