/**
 * AP2 open Payment Mandates in, over HTTP on the local chain (issue 44 item 3). Each mandate is
 * posted by the owner, built into a grant, signed and enabled as any grant; then the delegate goes
 * around the service (its own redemption, straight to the bundler and through its own `handleOps`)
 * and the chain refuses each limit the mandate set: beyond amount_range (per action), beyond the
 * recurrence's allowance and the budget, to a payee not allowed, before and after execution_date.
 * The grant shows the mandate's hash and the owner's log has it. Mandates that cannot be held are
 * a 400 naming each constraint, and nothing is stored.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mandateHash } from "../../src/ap2/Schemas.ts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { balances, makeAttacker, redeemCall as redeemWith, refused, succeeds, transfer, withArgs } from "../delegations/attacker.ts"
import { failure, newSession, type Session, signLeg, signOp } from "../delegations/helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const reference = { type: "payment.reference", conditional_transaction_id: "FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8" }
const mandateOf = (constraints: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  vct: "mandate.payment.open.1",
  constraints: [...constraints, reference],
  cnf: { jwk: { kty: "EC", crv: "P-256", x: "QpSyxPQHy38xckypDr54gZ3T42zj9iLtV4koyb5U27c", y: "37HLd7JJinxjJIn8J7HijssoeclbfhdW-gUL7feI9lw" } },
  ...extra
})

/** The mandate built, signed and enabled through the service: the grant the delegate holds. */
const enableMandate = (owner: Session, delegate: Session, mandate: object) =>
  Effect.gen(function*() {
    const net = yield* Network
    const build = yield* owner.api.ap2.buildPaymentMandate({
      payload: { mandate: mandate as never, delegateeAddress: delegate.account.address, chainId: net.chainId }
    })
    const leg = build.delegations[0]!
    const signature = yield* signLeg(owner.key, leg.typedData)
    const created = yield* owner.api.delegations.create({
      payload: {
        userOp: yield* signOp(owner.key, build.enableUserOp),
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature }]
      }
    })
    assert.strictEqual(created.status, "active")
    return { build, created, signed: { ...leg.delegation, signature } as unknown as Delegation }
  })

/** The delegate's own redemption of its grant, with the caveat args it picks itself (its one token's period entry). */
const redeemCall = (signed: Delegation, execution: ReturnType<typeof transfer>) =>
  Effect.map(Network, (net) => redeemWith(withArgs(signed, net.delegation.caveatEnforcers, { tokenIndex: 0 }), execution))

const count = (table: "delegation_builds" | "audit_entries", column: "signer_address" | "account_id", value: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE ${sql(column)} = ${value}`.pipe(Effect.map((r) => r[0]!.n)))

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second" } }), { timeout: Duration.seconds(240), excludeTestServices: true })(
  "AP2 open Payment Mandates",
  (it) => {
    it.effect("a WEEKLY mandate: the chain refuses beyond amount_range, beyond the week's allowance, and a payee not allowed", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const [alice, bob] = [randomAddress(), randomAddress()]
        const usdc = net.tokens.usd.address
        yield* mint("usd", owner.account.address as Hex, 50)
        // 3 USD a payment, one a week, at most 3 times, 10 USD in all (3 x 3 = 9 stays within it), to Alice only.
        const mandate = mandateOf([
          { type: "payment.amount_range", currency: "USD", max: 300, min: 0 },
          { type: "payment.budget", currency: "USD", max: 10 },
          { type: "payment.agent_recurrence", frequency: "WEEKLY", max_occurrences: 3 },
          { type: "payment.allowed_payees", allowed: [{ id: alice, name: "Alice \"the\u202e shop\"\u0000" }] }
        ], { exp: Math.floor(Date.now() / 1000) + 20 * 86_400 })
        const { build, created, signed } = yield* enableMandate(owner, delegate, mandate)
        const hash = mandateHash(mandate)
        assert.deepStrictEqual(build.mandate, { standard: "ap2", vct: "mandate.payment.open.1", hash, hashAlgorithm: "sha-256", canonicalization: "RFC 8785" })
        // The summary: the limits from the signed caveats, then what was mapped, then the owner-facing quote of the payee's name.
        const s = build.humanSummary
        for (const words of ["at most 3 USDC per week", "at most 3 USDC per action", "in at most 3 actions", `only to ${alice}`,
          `AP2 open payment mandate ${hash}`, "payment.amount_range is the per-action maximum", "is not held on chain"]) assert.include(s, words)
        assert.isTrue(s.indexOf(`AP2 open payment mandate`) > s.indexOf("Nothing else is allowed"), "the mapping follows the limits")
        assert.include(s, `${alice} "Alice 'the shop'"`)
        assert.notInclude(s, "\u0000")
        assert.notInclude(s, "\u202e")
        // The grant keeps the hash; the owner's log has it.
        assert.deepStrictEqual((yield* owner.api.delegations.get({ params: { delegationId: created.id } })).mandate, build.mandate)
        const sql = yield* SqlClient.SqlClient
        const logged = yield* sql<{ decline_id: string; action: string; status: string }>`
          SELECT decline_id, action, status FROM audit_entries WHERE account_id = ${owner.account.id} AND action = 'ap2_mandate_build'`
        assert.deepStrictEqual(logged.map((e) => [e.decline_id, e.status]), [[`ap2-mandate:${hash}:${created.permissionId}`, "accepted"]])

        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc], holders: [owner.account.address as Address, alice, bob] }
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, alice, USD(3.01))), "TransferCapEnforcer:amount-exceeded")
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, bob, USD(1))), "AllowedCalldataEnforcer:invalid-calldata")
        yield* succeeds(attacker, yield* redeemCall(signed, transfer(usdc, alice, USD(3))))
        // The week's allowance is one payment's maximum: anything more this week is refused.
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, alice, USD(0.5))), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
        assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice, bob]), [USD(3), 0n])
      }), 120_000) // an enable and seven bundler round trips (16 s at load 28, more when the machine is busier)

    it.effect("an ON_DEMAND mandate: the chain refuses before execution_date, beyond the budget and after execution_date", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const [alice] = [randomAddress()]
        const usdc = net.tokens.usd.address
        yield* mint("usd", owner.account.address as Hex, 50)
        const nowS = Math.floor(Date.now() / 1000)
        // A window that opens once the grant is enabled and closes 15 s later (the enable takes a few seconds under load).
        const opens = nowS + 40
        const closes = opens + 15
        const mandate = mandateOf([
          { type: "payment.amount_range", currency: "USD", max: 300 },
          { type: "payment.budget", currency: "USD", max: 5 },
          { type: "payment.agent_recurrence", frequency: "ON_DEMAND", max_occurrences: 10 },
          { type: "payment.execution_date", not_before: new Date(opens * 1000).toISOString(), not_after: new Date(closes * 1000).toISOString() }
        ])
        const { build, signed } = yield* enableMandate(owner, delegate, mandate)
        assert.include(build.humanSummary, `at most 5 USDC in total from ${new Date(opens * 1000).toISOString().slice(0, 10)}`)
        assert.include(build.humanSummary, "at most 3 USDC per action")
        assert.include(build.humanSummary, "in at most 10 actions")
        assert.include(build.humanSummary, `from ${new Date(opens * 1000).toISOString().slice(0, 10)} ${new Date(opens * 1000).toISOString().slice(11, 19)} UTC`)
        assert.strictEqual(build.policySet.notBefore, new Date(opens * 1000).toISOString())
        // not_after is inclusive: the chain's expiry is the next second.
        assert.strictEqual(build.policySet.expiresAt, new Date((closes + 1) * 1000).toISOString())
        const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
        const watch = { tokens: [usdc], holders: [owner.account.address as Address, alice] }
        assert.isBelow(Date.now() / 1000, opens - 3, "the grant is enabled before the window opens")
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, alice, USD(1))), "TimestampEnforcer:early-delegation")

        yield* Effect.sleep(Duration.millis(Math.max(0, opens * 1000 - Date.now()) + 1_500))
        // A transaction mines a block at the current time: the chain's clock reads past the window's start.
        yield* mint("usd", owner.account.address as Hex, 1)
        yield* succeeds(attacker, yield* redeemCall(signed, transfer(usdc, alice, USD(3))))
        // 2 USD of the budget are left: 3 more is refused, 2 goes.
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, alice, USD(3))), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
        yield* succeeds(attacker, yield* redeemCall(signed, transfer(usdc, alice, USD(2))))
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, alice, USD(0.01))), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
        assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(5)])

        // After not_after the grant has expired on chain.
        yield* Effect.sleep(Duration.millis(Math.max(0, (closes + 1) * 1000 - Date.now()) + 1_500))
        yield* mint("usd", owner.account.address as Hex, 1)
        yield* refused(attacker, watch, yield* redeemCall(signed, transfer(usdc, alice, USD(0.01))), "TimestampEnforcer:expired-delegation")
      }), 150_000)

    it.effect("a mandate the chain cannot hold: 400 naming every constraint (NUL, 10 kB strings included), nothing stored", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const long = "x".repeat(10_000)
        const post = (mandate: unknown) =>
          failure(owner.api.ap2.buildPaymentMandate({
            payload: { mandate: mandate as never, delegateeAddress: delegate.account.address, chainId: net.chainId }
          }))
        const unholdable = yield* post(mandateOf([
          { type: "payment.amount_range", currency: "USD", max: 500, min: 100 },
          { type: "payment.budget", currency: "USD", max: 50 },
          { type: "payment.agent_recurrence", frequency: "MONTHLY" },
          { type: "payment.allowed_payees", allowed: [{ id: `merchant\u0000${long}`, name: long }] },
          { type: "payment.allowed_payment_instruments", allowed: [{ id: "abe3c", type: "card" }] }
        ], { payment_amount: { amount: 100, currency: "USD" } }))
        assert.strictEqual(unholdable.tag, "BadRequest")
        assert.sameMembers(unholdable.details["constraints"] as Array<string>, [
          "payment.amount_range",
          "payment.agent_recurrence",
          "payment.allowed_payees",
          "payment.allowed_payment_instruments",
          "payment_amount"
        ])
        assert.notInclude(unholdable.message, "\u0000")
        assert.isBelow(unholdable.message.length, 4_001)
        // A currency no token here pays, in a 10 kB string with a NUL.
        const currency = yield* post(mandateOf([{ type: "payment.amount_range", currency: `\u0000${long}`, max: 100 }]))
        assert.deepStrictEqual(currency.details["constraints"], ["payment.amount_range"])
        // Not an AP2 open Payment Mandate at all: the schema's refusal, with the paths.
        const invalid = yield* post({ vct: "mandate.payment.open.1", constraints: [{ type: "payment.amount_range", currency: "USD", max: 1.5 }], cnf: {} })
        assert.strictEqual(invalid.tag, "BadRequest")
        assert.include(JSON.stringify(invalid.details["issues"]), "body.mandate.constraints")
        const closed = yield* post({ ...mandateOf([]), vct: "mandate.payment.1" })
        assert.include(closed.message, "mandate.vct")
        // Nothing stored: no build, no log entry.
        assert.strictEqual(yield* count("delegation_builds", "signer_address", privateKeyToAccount(owner.key).address.toLowerCase()), 0)
        assert.strictEqual(yield* count("audit_entries", "account_id", owner.account.id), 0)
      }))
  }
)
