import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn, signInMessage } from "../../src/client/signIn.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const newSigner = () => privateKeyToAccount(generatePrivateKey())

layer(TestServerLive(), { excludeTestServices: true })("sign-in and sessions", (it) => {
  it.effect("a fresh key signs in, gets a token and its primary account", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const signer = newSigner()
      const session = yield* signIn(baseUrl, signer)
      assert.strictEqual(session.signerAddress, signer.address.toLowerCase())
      assert.isAtLeast(Buffer.from(session.token, "base64url").length, 16)
      // Account 0 on each served chain (the run's two local chains), the primary chain first, at one address.
      assert.deepStrictEqual(session.accounts.map((a) => a.chainId), [31337, 31338])
      assert.isTrue(session.accounts.every((a) => a.index === 0 && a.purpose === "primary" && a.deploymentStatus === "counterfactual"))
      assert.strictEqual(session.accounts[0]!.address, session.accounts[1]!.address)
      assert.notStrictEqual(session.accounts[0]!.id, session.accounts[1]!.id)

      const api = yield* client(session.token)
      const current = yield* api.session.current()
      assert.strictEqual(current.signerAddress, signer.address.toLowerCase())
      const accounts = yield* api.accounts.listAccounts()
      assert.deepStrictEqual(accounts, session.accounts)
    }))

  it.effect("signing in again keeps the same primary account", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const signer = newSigner()
      const first = yield* signIn(baseUrl, signer)
      const second = yield* signIn(baseUrl, signer)
      assert.notStrictEqual(first.token, second.token)
      assert.deepStrictEqual(second.accounts, first.accounts)
    }))

  it.effect("a nonce is single use: replaying a signed message is refused", () =>
    Effect.gen(function*() {
      const api = yield* client()
      const signer = newSigner()
      const nonce = yield* api.auth.nonce()
      const message = signInMessage(signer, nonce)
      const signature = yield* Effect.promise(() => signer.signMessage({ message }))
      yield* api.auth.signIn({ payload: { message, signature } })
      const replay = yield* api.auth.signIn({ payload: { message, signature } }).pipe(Effect.flip)
      assert.strictEqual(replay._tag, "Unauthorized")
    }))

  it.effect("a nonce the service never issued is refused", () =>
    Effect.gen(function*() {
      const api = yield* client()
      const signer = newSigner()
      const nonce = yield* api.auth.nonce()
      const message = signInMessage(signer, { ...nonce, nonce: "a1b2c3d4e5f6a7b8c9d0" })
      const signature = yield* Effect.promise(() => signer.signMessage({ message }))
      const error = yield* api.auth.signIn({ payload: { message, signature } }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "Unauthorized")
    }))

  it.effect("a signature by another key is refused and does not burn the nonce", () =>
    Effect.gen(function*() {
      const api = yield* client()
      const signer = newSigner()
      const nonce = yield* api.auth.nonce()
      const message = signInMessage(signer, nonce)
      const forged = yield* Effect.promise(() => newSigner().signMessage({ message }))
      const error = yield* api.auth.signIn({ payload: { message, signature: forged } }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "Unauthorized")
      const signature = yield* Effect.promise(() => signer.signMessage({ message }))
      const ok = yield* api.auth.signIn({ payload: { message, signature } })
      assert.strictEqual(ok.signerAddress, signer.address.toLowerCase())
    }))

  it.effect("an unreadable expiration or not-before time is a 400 and does not burn the nonce", () =>
    Effect.gen(function*() {
      const api = yield* client()
      const signer = newSigner()
      const nonce = yield* api.auth.nonce()
      const message = signInMessage(signer, nonce)
      for (const extra of ["\nExpiration Time: 2026-99-99T00:00:00Z", "\nNot Before: 2026-99-99T00:00:00Z"]) {
        const bad = message + extra
        const signature = yield* Effect.promise(() => signer.signMessage({ message: bad }))
        const error = yield* api.auth.signIn({ payload: { message: bad, signature } }).pipe(Effect.flip)
        assert.strictEqual(error._tag, "BadRequest", extra)
      }
      const signature = yield* Effect.promise(() => signer.signMessage({ message }))
      const ok = yield* api.auth.signIn({ payload: { message, signature } })
      assert.strictEqual(ok.signerAddress, signer.address.toLowerCase())
    }))

  it.effect("expired nonces are deleted as new ones are issued (the public nonce endpoint cannot grow the table)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO signin_nonces (nonce, issued_at, expires_at)
                 VALUES ('stale0000000000000001', now() - interval '2 hours', now() - interval '1 hour')`
      const api = yield* client()
      yield* api.auth.nonce()
      const left = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM signin_nonces WHERE nonce = 'stale0000000000000001'`
      assert.strictEqual(left[0]!.n, 0)
    }))

  describe("message checks", () => {
    const refused = (mutate: (n: { nonce: string; domain: string; uri: string; chainId: number }) => {
      nonce: string
      domain: string
      uri: string
      chainId: number
    }, issuedAt?: Date) =>
      Effect.gen(function*() {
        const api = yield* client()
        const signer = newSigner()
        const nonce = yield* api.auth.nonce()
        const message = signInMessage(signer, mutate(nonce), issuedAt)
        const signature = yield* Effect.promise(() => signer.signMessage({ message }))
        return yield* api.auth.signIn({ payload: { message, signature } }).pipe(Effect.flip)
      })

    it.effect("wrong domain", () =>
      Effect.map(refused((n) => ({ ...n, domain: "evil.test" })), (e) => {
        assert.strictEqual(e._tag, "BadRequest")
        assert.include(e.message, "domain")
      }))
    it.effect("wrong URI", () =>
      Effect.map(refused((n) => ({ ...n, uri: "https://evil.test" })), (e) => assert.include(e.message, "URI")))
    it.effect("wrong chain id", () =>
      Effect.map(refused((n) => ({ ...n, chainId: 1 })), (e) => assert.include(e.message, "chain")))
    it.effect("a message issued too long ago", () =>
      Effect.map(refused((n) => n, new Date(Date.now() - 60 * 60 * 1000)), (e) => assert.include(e.message, "too old")))
    it.effect("a message issued in the future", () =>
      Effect.map(refused((n) => n, new Date(Date.now() + 60 * 60 * 1000)), (e) => assert.include(e.message, "future")))
  })
})

layer(TestServerLive({ config: { SESSION_TTL: "1 second" } }), { excludeTestServices: true })("session expiry", (it) => {
  it.effect("an expired session token answers 401", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const session = yield* signIn(baseUrl, newSigner())
      const api = yield* client(session.token)
      yield* api.accounts.listAccounts()
      yield* Effect.sleep("1200 millis")
      const error = yield* api.accounts.listAccounts().pipe(Effect.flip)
      assert.strictEqual(error._tag, "Unauthorized")
    }))
})
