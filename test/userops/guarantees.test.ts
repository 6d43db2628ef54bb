/**
 * The two guarantees a faster relay must keep (issue 30, item 3), each checked at the moment
 * it matters rather than after the fact:
 * - the operation's record is committed before the bundler is shown the operation: when the
 *   `eth_sendUserOperation` reaches the bundler, another connection already reads the row
 *   (`submitted`, holding its send lease);
 * - a session revoked by log-out stops at once: the very next `POST /userops` with its token is
 *   a 401, stores nothing and sends nothing.
 * `POST /userops` checks the session in the relay's first statement (with the build lookup), not
 * in the middleware: the tests below also hold it to everything the middleware refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { hashToken } from "../../src/auth/Sessions.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { testNetwork } from "../support/TestChain.ts"
import { startInstance } from "../support/TestServer.ts"
import { bundlerProxy } from "./bundlerProxy.ts"
import { signBuild } from "./helpers.ts"

const signedFreeze = (baseUrl: string) =>
  Effect.gen(function*() {
    const key = generatePrivateKey()
    const session = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* makeClient({ baseUrl, token: session.token })
    const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
    return { token: session.token, api, build, signed: yield* signBuild(build, key) }
  })

describe("relay guarantees", () => {
  it.live("the record is committed before the bundler sees the operation", () =>
    Effect.gen(function*() {
      const seen: Array<{ hash: string; rows: ReadonlyArray<{ status: string; lease: boolean }> }> = []
      let read: ((hash: string) => Promise<ReadonlyArray<{ status: string; lease: boolean }>>) | undefined
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "up", async (body) => {
        const op = (JSON.parse(body) as { params: ReadonlyArray<{ sender: string }> }).params[0]!
        const userOpHash = hashOf.get(op.sender.toLowerCase())
        if (userOpHash !== undefined && read !== undefined) seen.push({ hash: userOpHash, rows: await read(userOpHash) })
      })
      const hashOf = new Map<string, string>()
      const instance = yield* startInstance({ config: {}, chain: { bundlerUrl: proxy.url } })
      // Another connection of the same pool: it sees only what was committed.
      read = (hash) =>
        Effect.runPromise(instance.sql<{ status: string; lease: boolean }>`
          SELECT status, send_lease_until > now() AS lease FROM user_operations WHERE user_op_hash = ${hash.toLowerCase()}`.pipe(
          Effect.orDie
        ))
      const user = yield* signedFreeze(instance.baseUrl)
      hashOf.set(user.build.userOp.sender.toLowerCase(), user.build.userOpHash)
      const receipt = yield* user.api.userops.submit({ payload: user.signed })
      assert.strictEqual(receipt.status, "submitted")
      assert.strictEqual(proxy.forwardedSends(), 1)
      assert.deepStrictEqual(seen, [{ hash: user.build.userOpHash, rows: [{ status: "submitted", lease: true }] }])
      yield* instance.stop
    }).pipe(Effect.scoped))

  it.live("a session revoked by log-out is refused at once: 401, nothing stored, nothing sent", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "up")
      const instance = yield* startInstance({ config: {}, chain: { bundlerUrl: proxy.url } })
      const user = yield* signedFreeze(instance.baseUrl)
      yield* user.api.session.signOut()
      const refused = yield* user.api.userops.submit({ payload: user.signed }).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "Unauthorized")
      const rows = yield* instance.sql`SELECT 1 FROM user_operations WHERE user_op_hash = ${user.build.userOpHash.toLowerCase()}`
      assert.strictEqual(rows.length, 0)
      assert.strictEqual(proxy.forwardedSends(), 0)
      yield* instance.stop
    }).pipe(Effect.scoped))

  it.live("a revoked session is not answered an operation it stored before: 401, nothing sent again", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "up")
      const instance = yield* startInstance({ config: {}, chain: { bundlerUrl: proxy.url } })
      const user = yield* signedFreeze(instance.baseUrl)
      const first = yield* user.api.userops.submit({ payload: user.signed })
      assert.strictEqual(proxy.forwardedSends(), 1)
      yield* user.api.session.signOut()
      // The lookup of earlier submissions runs beside the session's statement: its find is not the answer.
      const refused = yield* user.api.userops.submit({ payload: user.signed }).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "Unauthorized")
      const rows = yield* instance.sql<{ id: string }>`SELECT id FROM user_operations WHERE user_op_hash = ${user.build.userOpHash.toLowerCase()}`
      assert.deepStrictEqual(rows.map((r) => r.id), [first.userOpId])
      assert.strictEqual(proxy.forwardedSends(), 1)
      yield* instance.stop
    }).pipe(Effect.scoped))

  it.live("an expired session, an unknown token of the right form, another signer's session: refused, nothing stored or sent", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "up")
      const instance = yield* startInstance({ config: {}, chain: { bundlerUrl: proxy.url } })
      const stored = () =>
        instance.sql`SELECT 1 FROM user_operations WHERE user_op_hash = ${user.build.userOpHash.toLowerCase()}`.pipe(Effect.map((r) => r.length))
      const user = yield* signedFreeze(instance.baseUrl)

      // Another signer's live session: the build lookup reads only that signer's builds (404, as for a build never made).
      const other = yield* signedFreeze(instance.baseUrl)
      const notHis = yield* other.api.userops.submit({ payload: user.signed }).pipe(Effect.flip)
      assert.strictEqual(notHis._tag, "NotFound")

      // 43 base64url characters, as a session token is, that no session has.
      const unknown = yield* makeClient({ baseUrl: instance.baseUrl, token: "A".repeat(43) })
      assert.strictEqual((yield* unknown.userops.submit({ payload: user.signed }).pipe(Effect.flip))._tag, "Unauthorized")

      yield* instance.sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = ${hashToken(user.token)}`
      assert.strictEqual((yield* user.api.userops.submit({ payload: user.signed }).pipe(Effect.flip))._tag, "Unauthorized")

      // A malformed operation, or one for a chain not served, with that expired token: still the 401 (the contract's
      // "token expired → 401"), though the payload is refused before the relay's statement runs.
      for (const body of [JSON.stringify({ sender: "nope" }), JSON.stringify({ ...user.signed, chainId: 999 })]) {
        const res = yield* Effect.promise(() =>
          fetch(`${instance.baseUrl}/userops`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` }, body })
        )
        assert.strictEqual(res.status, 401, body)
      }
      // The same malformed request with a live session: the 400 naming what is wrong.
      const malformed = yield* Effect.promise(() =>
        fetch(`${instance.baseUrl}/userops`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${other.token}` }, body: JSON.stringify({ sender: "nope" }) })
      )
      assert.strictEqual(malformed.status, 400)

      assert.strictEqual(yield* stored(), 0)
      assert.strictEqual(proxy.forwardedSends(), 0)
      yield* instance.stop
    }).pipe(Effect.scoped))
})
