/**
 * `GET /accounts` checks the session in the accounts' own statement (one round trip, as the
 * relay's lookup; docs/performance.md, issue 46 item 1). What a caller sees is what the bearer
 * middleware answered before: a live session lists its signer's accounts and no one else's; an
 * unknown, expired or revoked token is the 401 envelope with its challenge, at once.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { hashToken } from "../../src/auth/Sessions.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const get = (baseUrl: string, token: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/accounts`, { headers: { authorization: `Bearer ${token}` } })
    return { status: response.status, headers: response.headers, body: (await response.json()) as any }
  })

/** The 401 the bearer middleware answers: the envelope, its request id on the header too, and the challenge. */
const assertRefused = (answer: { status: number; headers: Headers; body: any }) => {
  assert.strictEqual(answer.status, 401)
  assert.strictEqual(answer.body.error.code, "unauthorized")
  assert.strictEqual(answer.body.error.message, "Missing, unknown, expired or revoked session token")
  assert.strictEqual(answer.headers.get("x-request-id"), answer.body.error.requestId)
  assert.strictEqual(answer.headers.get("www-authenticate"), "Bearer error=\"invalid_token\"")
  assert.strictEqual(answer.headers.get("x-content-type-options"), "nosniff")
}

layer(TestServerLive(), { excludeTestServices: true })("GET /accounts with the session in its statement", (it) => {
  it.effect("a live session lists its signer's accounts only, in order; the answer carries the edge's headers", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const alice = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const bob = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      yield* Effect.flatMap(client(alice.token), (api) => api.accounts.createAccount({ payload: { label: "second" } }))
      const answer = yield* get(baseUrl, alice.token)
      assert.strictEqual(answer.status, 200)
      assert.match(answer.headers.get("x-request-id") ?? "", /^[0-9a-f]{32}$/)
      assert.strictEqual(answer.headers.get("x-content-type-options"), "nosniff")
      // Index 0 then 1, the primary chain first within an index; every one the signer's.
      assert.deepStrictEqual(answer.body.map((a: any) => [a.index, a.chainId, a.label]), [
        [0, 31337, "Primary"],
        [0, 31338, "Primary"],
        [1, 31337, "second"],
        [1, 31338, "second"]
      ])
      assert.isTrue(answer.body.every((a: any) => a.signerAddress === alice.signerAddress.toLowerCase()))
      const bobs = yield* get(baseUrl, bob.token)
      assert.deepStrictEqual(bobs.body.map((a: any) => a.signerAddress), [bob.signerAddress.toLowerCase(), bob.signerAddress.toLowerCase()])
    }))

  it.effect("an unknown token of the right shape, an expired session and a revoked one: the 401 envelope", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      assertRefused(yield* get(baseUrl, "A".repeat(43)))
      const expired = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      assert.strictEqual((yield* get(baseUrl, expired.token)).status, 200)
      yield* sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = ${hashToken(expired.token)}`
      assertRefused(yield* get(baseUrl, expired.token))
      const revoked = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      yield* Effect.flatMap(client(revoked.token), (api) => api.session.signOut())
      assertRefused(yield* get(baseUrl, revoked.token))
    }))

  it.effect("a live session whose signer has no account left lists none (not a 401)", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      // As after a key replaced on chain: the accounts moved to another signer.
      yield* sql`UPDATE accounts SET signer_address = ${"0x" + "ab".repeat(20)} WHERE signer_address = ${session.signerAddress.toLowerCase()}`
      const answer = yield* get(baseUrl, session.token)
      assert.strictEqual(answer.status, 200)
      assert.deepStrictEqual(answer.body, [])
    }))
})
