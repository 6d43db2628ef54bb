/**
 * `POST /accounts` under concurrency, as the fuzzer found it: many creates for one signer
 * at once each get an account of their own, with the next free indexes and no gaps or
 * repeats (one create per signer at a time in the database; before, racing for the index
 * and retrying let a burst of creates answer 500).
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

layer(TestServerLive(), { excludeTestServices: true })("creating accounts", (it) => {
  it.effect("40 creates for one signer at once: 40 accounts on each chain, indexes 1..40, each answered its own", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const api = yield* client(session.token)
      const created = yield* Effect.all(
        Array.from({ length: 40 }, (_, i) => api.accounts.createAccount({ payload: { label: `burst ${i}` } })),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(created.map((a) => a.index).sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1))
      created.forEach((a, i) => assert.strictEqual(a.label, `burst ${i}`))
      assert.strictEqual(new Set(created.map((a) => a.address)).size, 40)
      // Each index on both served chains, at one address per index.
      const listed = yield* api.accounts.listAccounts()
      assert.deepStrictEqual(listed.map((a) => a.index), Array.from({ length: 82 }, (_, i) => Math.floor(i / 2)))
      assert.isTrue(listed.every((a, i) => a.chainId === (i % 2 === 0 ? 31337 : 31338) && a.address === listed[i - (i % 2)]!.address))
    }), 60_000)
})
