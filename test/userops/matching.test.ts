/**
 * The relay takes exactly what was built and signed (issue 11, "The relay can lose a spend
 * or block an owner"): a copy with other signed fields matches no build; a rejected
 * submission with a bad signature never answers for the correctly signed one; other
 * builds on the same (sender, nonce) cannot push a build out of the relay's lookup.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey } from "viem/accounts"
import { OperationBuilderLive } from "../../src/userops/Live.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { newUser, settle, signBuild } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const Live = OperationBuilderLive.pipe(
  Layer.provideMerge(TestServerLive({ config: { RELAY_RECONCILE_INTERVAL: "300 millis" } }))
)

layer(Live, { excludeTestServices: true, timeout: Duration.seconds(60) })("relay matching", (it) => {
  it.effect("a bad-signature copy is rejected; the correctly signed operation is then forwarded and mined", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const build = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const forged = yield* signBuild(build, generatePrivateKey())
      const rejected = yield* settle(user.api, (yield* user.api.userops.submit({ payload: forged })).userOpId)
      assert.strictEqual(rejected.status, "failed")
      assert.strictEqual(rejected.outcome, "rejected")

      const signed = yield* signBuild(build, user.key)
      const submitted = yield* user.api.userops.submit({ payload: signed })
      assert.notStrictEqual(submitted.userOpId, rejected.userOpId)
      assert.strictEqual(submitted.userOpHash, build.userOpHash)
      const mined = yield* settle(user.api, submitted.userOpId)
      assert.strictEqual(mined.status, "included")
      assert.strictEqual(mined.outcome, "mined")
      assert.isTrue((yield* user.api.accounts.getRules({ query: {} })).frozen)
      // Each signed operation keeps its own answer.
      assert.strictEqual((yield* user.api.userops.submit({ payload: forged })).userOpId, rejected.userOpId)
      assert.strictEqual((yield* user.api.userops.submit({ payload: signed })).userOpId, submitted.userOpId)
    }))

  it.effect("a copy with other signed fields (fees, gas, paymaster data) matches no build: 400, nothing stored", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const user = yield* newUser
      const build = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const signed = yield* signBuild(build, user.key)
      const copies = [
        { ...signed, maxPriorityFeePerGas: (BigInt(signed.maxPriorityFeePerGas) + 1n).toString() },
        { ...signed, callGasLimit: (BigInt(signed.callGasLimit) + 1n).toString() },
        { ...signed, preVerificationGas: (BigInt(signed.preVerificationGas) + 1n).toString() },
        { ...signed, paymasterData: `${signed.paymasterData}00` }
      ]
      for (const copy of copies) {
        const refused = yield* user.api.userops.submit({ payload: copy }).pipe(Effect.flip)
        assert.strictEqual(refused._tag, "BadRequest")
      }
      const stored = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM user_operations WHERE sender = ${user.account.address.toLowerCase()}`
      assert.strictEqual(stored[0]!.n, 0)
      const mined = yield* settle(user.api, (yield* user.api.userops.submit({ payload: signed })).userOpId)
      assert.strictEqual(mined.status, "included")
    }))

  it.effect("50 newer builds on the victim's (sender, nonce) do not push its signed freeze out of the lookup", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const user = yield* newUser
      const build = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      // What 50 `/actions` builds on a delegation naming the victim's account as delegatee leave behind:
      // newer builds of the victim's account at the same (sender, nonce), with other call data.
      yield* sql`
        INSERT INTO op_builds (id, account_id, signer_address, intent_type, chain_id, entry_point, sender, nonce, call_data,
                               user_op, user_op_hash, risk_reducing, sponsored, human_summary, metadata, created_at, expires_at)
        SELECT 'bld_crowd_' || g || '_' || b.id, b.account_id, b.signer_address, 'delegated_action', b.chain_id, b.entry_point,
               b.sender, b.nonce, '0xdead' || g, b.user_op, '0x' || md5(b.id || g), false, true, NULL, '{}'::jsonb,
               now() + interval '1 second', b.expires_at
        FROM op_builds b, generate_series(1, 50) g WHERE b.id = ${build.buildId}`
      const mined = yield* settle(user.api, (yield* user.api.userops.submit({ payload: yield* signBuild(build, user.key) })).userOpId)
      assert.strictEqual(mined.status, "included")
      assert.isTrue((yield* user.api.accounts.getRules({ query: {} })).frozen)
    }))
})
