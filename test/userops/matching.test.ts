/**
 * The relay takes exactly what was built and signed (issue 11, item 4), each case an
 * attack that worked before:
 * - a copy of an action with a different signed field is refused (400) and stores
 *   nothing, so its failure can never free the real operation's reservation; the real
 *   one executes and its spend is counted;
 * - a copy with a bad signature is refused by the bundler, and the correctly signed
 *   operation (same hash) is then forwarded and executes, not answered with the refusal;
 * - sixty builds a stranger makes on the victim's (sender, nonce) — actions under a
 *   delegation naming the victim's account as delegatee — cannot crowd the victim's own
 *   signed freeze out of the relay's lookup.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { enabled, failure, newSession, relay, signOp, usdcBalance } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { SqlClient } from "effect/sql"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase()

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("relay matching", (it) => {
  it.effect("a copy with another signed field, or with a bad signature, never stands for the real operation", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 30)
      const { created } = yield* enabled(owner, delegate, { budget: 30, perAction: 30, maxActions: 5 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 21 } })

      // A copy with a different (signed) gas limit: refused before anything is stored or sent.
      const copy = yield* signOp(delegate.key, { ...action.userOp, callGasLimit: (BigInt(action.userOp.callGasLimit) + 1n).toString() })
      const refused = yield* failure(delegate.api.userops.submit({ payload: copy }))
      assert.strictEqual(refused.tag, "BadRequest")
      const stored = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM user_operations WHERE build_id = ${action.buildId!}`
      assert.strictEqual(stored[0]!.n, 0)

      // A copy signed with the wrong key (same hash): refused by the bundler, recorded as such.
      const bad = yield* relay(delegate.api, yield* signOp(owner.key, action.userOp))
      assert.deepStrictEqual([bad.status, bad.outcome], ["failed", "rejected"])
      // The correctly signed operation is forwarded (not the refusal's receipt) and executes; its spend counts.
      const good = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.notStrictEqual(good.userOpId, bad.userOpId)
      assert.strictEqual(good.outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 21_000_000n)
      const after = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.deepStrictEqual(after.spentToDate.map((s) => s.spent), [21])
      // Re-submitting either copy answers its own receipt.
      assert.strictEqual((yield* delegate.api.userops.submit({ payload: yield* signOp(delegate.key, action.userOp) })).userOpId, good.userOpId)
    }))

  it.effect("a stranger's builds on the victim's (sender, nonce) cannot push the victim's freeze out of the lookup", () =>
    Effect.gen(function*() {
      const victim = yield* newSession()
      const stranger = yield* newSession()
      yield* mint("usd", stranger.account.address as Hex, 100)
      // The stranger grants the victim's account a delegation and builds sixty actions under it: each is an
      // operation of the victim's account, at the victim's next nonce.
      const { created } = yield* enabled(stranger, victim, { budget: 100, perAction: 1, maxActions: 100 })
      const recipient = randomAddress()
      const freeze = yield* victim.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const signed = yield* signOp(victim.key, freeze.userOp)
      yield* Effect.forEach(
        Array.from({ length: 60 }, (_, i) => i),
        () => stranger.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 0.01 } }),
        { concurrency: 10, discard: true }
      )
      const frozen = yield* relay(victim.api, signed)
      assert.strictEqual(frozen.outcome, "mined")
      assert.isTrue((yield* victim.api.accounts.listAccounts())[0]!.frozen)
    }))
})
