/**
 * Sponsorship with no free lane (issue 41, item 3). The farm: `recovery_cancel` with no
 * recovery started was risk-reducing, skipped the quotas and was never refused by the budget
 * (a budget of 2 operations sponsored 5, and built a 6th). Now an intent is free only while it
 * reduces a risk now, and every sponsored operation is counted:
 * - the counters themselves (real PostgreSQL): a risk-reducing build passes a used-up per-signer
 *   or per-address quota but is counted there, and counts against the budget; ordinary builds stop
 *   at the budget less its reserve, risk-reducing ones at the budget (never past it, also at once);
 * - through the service: a cancel with nothing to cancel is a 409 and counts nothing; a freeze is
 *   counted (the signer's next ordinary build meets its quota) and a freeze of a frozen account is
 *   a 409; with a budget of 2, a third freeze is refused; a revoke of an expired grant is an
 *   ordinary operation (counted, quota-bound), of a revoked one a 400.
 * Each intent marked risk-reducing has its refusal tested: account_freeze and delegation_revoke
 * here, panic_freeze in test/owner/panic.test.ts (a second freeze: 409), withdraw-to-safety in
 * test/owner/safety.test.ts (nothing to withdraw: 409), recovery_cancel here and with standing
 * approvals in test/owner/recovery.test.ts.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { chargeSponsorship, type SponsorLimits, SponsorshipBudget } from "../../src/builds/Sponsorship.ts"
import { Network } from "../../src/chain/Network.ts"
import { grant } from "../delegations/attacker.ts"
import { failure, newSession, relay, signOp } from "../delegations/helpers.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"
import { testConfig, TestServerLive } from "../support/TestServer.ts"
import { eventually } from "../approvals/support.ts"

process.env.DO_NOT_TRACK = "1"

const limitsOf = (o: Partial<SponsorLimits>): SponsorLimits => ({
  ops: 0,
  gas: 0n,
  addressOps: 0,
  addressGas: 0n,
  budgetOps: 0,
  budgetGas: 0n,
  warnAt: 0.8,
  reserve: 0,
  period: Duration.hours(1),
  maxFeePerGas: 1n,
  maxPriorityFeePerGas: 1n,
  ...o
})

/** One charge: "ok", or the refusal's tag and scope. */
const charge = (limits: SponsorLimits, chainId: number, signer: string, riskReducing: boolean, clientAddress?: string) =>
  chargeSponsorship(limits, { chainId, signer, clientAddress, gas: 100_000n, riskReducing }).pipe(
    Effect.as("ok"),
    Effect.catch((e) => Effect.succeed(`${e._tag}${(e.details as { scope?: string } | undefined)?.scope === "address" ? ":address" : ""}`))
  )

const counted = (scope: string, subject: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ ops: number }>`SELECT ops FROM sponsor_totals WHERE scope = ${scope} AND subject = ${subject}`
    return rows[0]?.ops ?? 0
  }).pipe(Effect.orDie)

layer(TestDatabaseLive({ maxConnections: 10 }), { excludeTestServices: true })("the sponsorship counters", (it) => {
  it.effect("a risk-reducing build passes a used-up quota but is counted there and against the budget; only the reserve is its alone", () =>
    Effect.gen(function*() {
      const chainId = 900_001
      const limits = limitsOf({ ops: 3, addressOps: 5, budgetOps: 10, reserve: 0.2 })
      const ip = "198.51.100.7"
      // The signer's quota: 3 ordinary, the 4th refused; a freeze passes it, and is counted.
      for (let i = 0; i < 3; i++) assert.strictEqual(yield* charge(limits, chainId, "0xs", false, ip), "ok")
      assert.strictEqual(yield* charge(limits, chainId, "0xs", false, ip), "TooManyRequests")
      assert.strictEqual(yield* charge(limits, chainId, "0xs", true, ip), "ok")
      assert.strictEqual(yield* counted("signer", `${chainId}:0xs`), 4)
      // The address's quota holds the freeze too: one more ordinary build from it, then 429 (address).
      assert.strictEqual(yield* charge(limits, chainId, "0xt", false, ip), "ok")
      assert.strictEqual(yield* charge(limits, chainId, "0xu", false, ip), "TooManyRequests:address")
      assert.strictEqual(yield* counted("address", `${chainId}:${ip}`), 5)
      // The budget: ordinary builds stop at 10 less its reserve (2): 3 more, then 503.
      for (const s of ["0xv", "0xw", "0xy"]) assert.strictEqual(yield* charge(limits, chainId, s, false), "ok")
      assert.strictEqual(yield* charge(limits, chainId, "0xz", false), "ServiceUnavailable")
      // Risk-reducing builds use the reserve, and never pass the budget.
      assert.strictEqual(yield* charge(limits, chainId, "0xa", true), "ok")
      assert.strictEqual(yield* charge(limits, chainId, "0xb", true), "ok")
      assert.strictEqual(yield* charge(limits, chainId, "0xc", true), "ServiceUnavailable")
      assert.strictEqual(yield* counted("budget", String(chainId)), 10, "never more than the budget")
    }))

  it.effect("at once: 12 freezes against a budget of 5 sponsor exactly 5; no reserve (0) leaves none past the budget", () =>
    Effect.gen(function*() {
      const chainId = 900_002
      const limits = limitsOf({ ops: 1, budgetOps: 5, reserve: 0 })
      const outcomes = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => `0x${i}`), (s) => charge(limits, chainId, s, true), { concurrency: 12 })
      assert.strictEqual(outcomes.filter((o) => o === "ok").length, 5)
      assert.isTrue(outcomes.every((o) => o === "ok" || o === "ServiceUnavailable"))
      assert.strictEqual(yield* counted("budget", String(chainId)), 5)
    }))
})

const budgetOf = (config: Record<string, string>) =>
  Effect.gen(function*() {
    const budget = yield* SponsorshipBudget
    const chainId = (yield* Network).chainId
    return (yield* budget.current).find((f) => f.chainId === chainId)!
  }).pipe(Effect.provide(SponsorshipBudget.layer.pipe(Layer.provide(testConfig(config)))))

describe("no free lane through the service", () => {
  const farm = { SPONSOR_BUDGET_OPS: "2", SPONSOR_BUDGET_GAS: "0", SPONSOR_BUDGET_RESERVE: "0", SPONSOR_QUOTA_OPS: "1", SPONSOR_QUOTA_PERIOD: "1 hour" }
  it.live("the issue's farm: a cancel with nothing to cancel is a 409 and counts nothing; freezes are counted, a frozen account's is a 409; a budget of 2 sponsors 2", () =>
    Effect.gen(function*() {
      const [owner, second, third] = yield* Effect.all([newSession(), newSession(), newSession()])
      const cancel = { intentType: "rules_update" as const, change: { kind: "recovery_cancel" as const } }
      for (let i = 0; i < 5; i++) {
        const refusal = yield* failure(owner.api.accounts.buildRules({ payload: cancel }))
        assert.deepStrictEqual([refusal.tag, refusal.details["field"]], ["Conflict", "change.kind"])
        assert.include(refusal.message, "nothing to cancel")
      }
      assert.strictEqual((yield* budgetOf(farm)).ops, 0, "a refusal counts nothing")

      // A real freeze: sponsored, mined, and counted (the signer's quota of 1 is now used).
      const freeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.isTrue(freeze.gasless && freeze.riskReducing)
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, freeze.userOp))).outcome, "mined")
      const again = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } }))
      assert.strictEqual(again.tag, "Conflict")
      const unfreeze = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } }))
      assert.strictEqual(unfreeze.tag, "TooManyRequests", "the freeze was counted against the signer's quota")

      // The budget of 2 holds freezes too: a second signer's is sponsored, a third's refused.
      assert.isTrue((yield* second.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })).gasless)
      const third3 = yield* failure(third.api.accounts.buildRules({ payload: { intentType: "account_freeze" } }))
      assert.strictEqual(third3.tag, "ServiceUnavailable")
      assert.include(third3.message, "sponsorship budget")
      const figures = yield* budgetOf(farm)
      assert.deepStrictEqual([figures.ops, figures.exhausted], [2, true])
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config: farm })))),
    { timeout: 150_000 })

  const revokes = { SPONSOR_QUOTA_OPS: "3", SPONSOR_QUOTA_PERIOD: "1 hour", DELEGATION_MIN_LIFETIME: "1 second" }
  it.live("a revoke is free only while the grant can act: of an expired grant an ordinary operation (quota-bound), of a revoked one a 400", () =>
    Effect.gen(function*() {
      const [owner, delegate] = yield* Effect.all([newSession(), newSession()])
      const budgets = [{ token: { symbol: "USDC" }, amount: 5 }]
      const short = yield* grant(owner, delegate, { budgets, maxActions: 1, expiresAt: new Date(Date.now() + 12_000).toISOString() })
      const live = yield* grant(owner, delegate, { budgets, maxActions: 1 })
      // Active: risk-reducing, sponsored (the signer's 3rd sponsored build), and once revoked a 400.
      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: live.id } })
      assert.isTrue(revoke.riskReducing && revoke.gasless)
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
      yield* eventually(owner.api.delegations.get({ params: { delegationId: live.id } }), (d) => d.status === "revoked")
      assert.strictEqual((yield* failure(owner.api.delegations.revoke({ params: { delegationId: live.id } }))).tag, "BadRequest")
      // Expired: nothing to take away, so no free lane: the signer's used-up quota refuses it.
      yield* Effect.sleep(Duration.millis(Math.max(0, Date.parse((yield* owner.api.delegations.get({ params: { delegationId: short.id } })).policySet.expiresAt) - Date.now() + 1000)))
      const expired = yield* failure(owner.api.delegations.revoke({ params: { delegationId: short.id } }))
      assert.strictEqual(expired.tag, "TooManyRequests")
      // Another owner's expired revoke, within its quota: built, not risk-reducing.
      const other = yield* newSession()
      const stale = yield* grant(other, delegate, { budgets, maxActions: 1, expiresAt: new Date(Date.now() + 8_000).toISOString() })
      yield* Effect.sleep(Duration.millis(Math.max(0, Date.parse((yield* other.api.delegations.get({ params: { delegationId: stale.id } })).policySet.expiresAt) - Date.now() + 1000)))
      const ordinary = yield* other.api.delegations.revoke({ params: { delegationId: stale.id } })
      assert.isFalse(ordinary.riskReducing)
    }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config: revokes })))),
    { timeout: 150_000 })
})
