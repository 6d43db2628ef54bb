/**
 * A re-send the bundler refuses is checked against the receipt before it is settled
 * `rejected`; when that receipt cannot be read (the bundler is flaky), nothing is known
 * and the operation must stay `submitted`: it may well have executed (here it did).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash } from "viem"
import { Bundler } from "../../src/chain/Bundler.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { testNetwork } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { bundlerProxy } from "./bundlerProxy.ts"
import { auditEntriesOf, signBuild } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("relay re-send", () => {
  it.live("a refused re-send while the bundler denies knowing the operation is settled from the chain, never rejected", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const context = yield* Layer.build(TestServerLive({
        config: {
          RELAY_RECONCILE_INTERVAL: "1 hour", // only the test's polls reconcile
          RELAY_RESEND_AFTER: "1 second",
          RELAY_SEND_LEASE: "1 second",
          BUNDLER_RETRIES: "0",
          BUNDLER_TIMEOUT: "3 seconds"
        },
        chain: { bundlerUrl: proxy.url }
      }))
      const baseUrl = Context.get(context, TestServer).baseUrl
      const bundler = Context.get(context, Bundler)
      const key = generatePrivateKey()
      const session = yield* signIn(baseUrl, privateKeyToAccount(key))
      const api = yield* makeClient({ baseUrl, token: session.token })
      const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const submitted = yield* api.userops.submit({ payload: yield* signBuild(build, key) })
      assert.strictEqual(submitted.status, "submitted")
      // Included on chain, not yet settled by the service (nobody polled).
      yield* bundler.getUserOperationReceipt(submitted.userOpHash as Hash).pipe(
        Effect.orDie,
        Effect.flatMap((r) => (r === null ? Effect.fail("no receipt yet") : Effect.succeed(r))),
        Effect.retry(Schedule.spaced(Duration.millis(100))),
        Effect.timeout(Duration.seconds(20)),
        Effect.orDie
      )
      yield* Effect.sleep(Duration.millis(1200)) // due for a re-send

      // The bundler claims not to know it, refuses the re-send (its nonce is used), then cannot be reached:
      // the chain shows it executed (the relay's refusal check or the follower reads it), so it is included.
      proxy.setMode("receipt-null-then-down")
      const during = yield* api.userops.get({ params: { userOpId: submitted.userOpId } })
      assert.notStrictEqual(during.status, "failed")
      assert.notStrictEqual(during.outcome, "rejected")

      proxy.setMode("up")
      const after = yield* api.userops.get({ params: { userOpId: submitted.userOpId } })
      assert.strictEqual(after.status, "included")
      assert.strictEqual(after.outcome, "mined")
      assert.isTrue((yield* api.accounts.getRules({ query: {} })).frozen)
      const entries = yield* auditEntriesOf(submitted.userOpId).pipe(
        Effect.provideService(SqlClient.SqlClient, Context.get(context, SqlClient.SqlClient))
      )
      assert.deepStrictEqual(entries.map((e) => e.status), ["executed"])
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
