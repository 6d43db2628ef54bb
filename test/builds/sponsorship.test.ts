/**
 * Sponsorship cannot be farmed: a per-signer quota counted when the paymaster signs (20
 * concurrent builds against a quota of 5: exactly 5 sponsored, 15 × 429 with Retry-After;
 * a freeze still sponsored past it), a fee ceiling on sponsored operations, and the
 * paymaster's signature binds the fees (the same operation at a higher price, sent
 * straight to the bundler by its owner, is refused).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { Network } from "../../src/chain/Network.ts"
import { newSession, relay, signOp } from "../delegations/helpers.ts"
import { TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const enableBuild = (s: Effect.Success<ReturnType<typeof newSession>>, delegatee: string, chainId: number) =>
  s.api.delegations.build({
    payload: { name: "quota", kind: "agent", delegateeAddress: delegatee, chainId, budgets: [{ token: { symbol: "USDC" }, amount: 1 }] }
  })

describe("sponsorship", () => {
  it.live("a per-signer quota, counted at build time under concurrency; risk-reducing builds are never refused", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const results = yield* Effect.forEach(
        Array.from({ length: 20 }, () => 0),
        () => enableBuild(owner, delegate.account.address, net.chainId).pipe(Effect.result),
        { concurrency: 20 }
      )
      const ok = results.filter((r) => r._tag === "Success")
      const refused = results.flatMap((r) => (r._tag === "Failure" ? [r.failure as { _tag: string; details?: { retryAfterSeconds?: number } }] : []))
      assert.strictEqual(ok.length, 5, "exactly the quota is sponsored")
      assert.strictEqual(refused.length, 15)
      assert.isTrue(refused.every((e) => e._tag === "TooManyRequests" && (e.details?.retryAfterSeconds ?? 0) > 0))
      for (const r of ok) assert.isTrue(r.success.simulation.gas.sponsored)
      // (Every 429 with details.retryAfterSeconds carries a Retry-After header: test/edge/retryAfter.test.ts.)
      // Another signer has its own quota.
      const other = yield* newSession()
      const theirs = yield* enableBuild(other, delegate.account.address, net.chainId)
      assert.isTrue(theirs.simulation.gas.sponsored)
      // A freeze (risk-reducing) is still sponsored for the signer whose quota is spent, and it executes.
      const freeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.isTrue(freeze.gasless)
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, freeze.userOp))).outcome, "mined")
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config: { SPONSOR_QUOTA_OPS: "5", SPONSOR_QUOTA_PERIOD: "1 hour" } })))),
    { timeout: Duration.toMillis(Duration.seconds(120)) })

  it.live("sponsored fees are capped, and the paymaster's signature binds them", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const bundler = yield* Bundler
      const owner = yield* newSession()
      const delegate = privateKeyToAccount(generatePrivateKey()).address
      const built = yield* enableBuild(owner, delegate, net.chainId)
      const op = built.enableUserOp
      assert.isAtMost(Number(op.maxPriorityFeePerGas), 1_000_000, "priority fee under the 0.001 gwei ceiling")
      assert.isAtMost(Number(op.maxFeePerGas), 50_000_000_000)
      // The owner (or anyone holding the signed op) raises the price and sends it straight to the bundler.
      const signed = yield* signOp(owner.key, op)
      const dearer = { ...op, maxPriorityFeePerGas: (BigInt(op.maxPriorityFeePerGas) * 10n + 1n).toString() }
      const resigned = yield* signOp(owner.key, dearer)
      const refused = yield* bundler.sendUserOperation(fromWire(resigned)).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "BundlerRejected")
      assert.include(refused.message, "AA34", "the sponsorship signature no longer matches")
      // As built, it executes (through the relay).
      assert.strictEqual((yield* relay(owner.api, signed)).outcome, "mined")
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config: { SPONSOR_MAX_PRIORITY_FEE_GWEI: "0.001" } })))),
    { timeout: Duration.toMillis(Duration.seconds(120)) })

  it.live("above the fee ceiling a sponsored build waits (503 with retryAfterSeconds)", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const delegate = privateKeyToAccount(generatePrivateKey()).address
      const refused = yield* enableBuild(owner, delegate, net.chainId).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "ServiceUnavailable")
      assert.include(refused.message, "sponsorship ceiling")
      assert.strictEqual((refused as { details?: { retryAfterSeconds?: number } }).details?.retryAfterSeconds, 30)
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config: { SPONSOR_MAX_FEE_GWEI: "0.000000001" } })))),
    { timeout: Duration.toMillis(Duration.seconds(60)) })
})
