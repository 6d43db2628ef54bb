/**
 * AP2 open Payment Mandates, pure: AP2's published schema (vendored) accepts and refuses what it
 * should; each constraint maps to exactly the limit docs/ap2.md names (several shapes), every
 * constraint the chain cannot hold is named (all at once, never the first only), and the hash is
 * RFC 8785's (key order and number spelling do not change it). Hostile strings (NUL, 10 kB) end
 * in a clear refusal or as cleaned, bounded words.
 */
import { assert, describe, it } from "@effect/vitest"
import canonicalize from "canonicalize"
import { createHash } from "node:crypto"
import { mapMandate, type MappingContext, type OpenPaymentMandate } from "../../src/ap2/Mapping.ts"
import { mandateHash, validateMandate } from "../../src/ap2/Schemas.ts"

const now = new Date("2026-12-07T12:00:00.000Z")
const nowS = now.getTime() / 1000
const alice = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
const bob = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
const ctx: MappingContext = {
  now,
  chainId: 31337,
  delegateeAddress: "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
  tokens: [{ symbol: "USDC", decimals: 6 }, { symbol: "USDT", decimals: 6 }],
  minLifetimeMs: 60_000
}
const reference = { type: "payment.reference", conditional_transaction_id: "FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8" }
const mandateOf = (constraints: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  vct: "mandate.payment.open.1",
  constraints: [...constraints, reference],
  cnf: { jwk: { kty: "EC", crv: "P-256", x: "x", y: "y" } },
  ...extra
})
const valid = (m: unknown): OpenPaymentMandate => {
  const checked = validateMandate(m)
  if ("issues" in checked) throw new Error(JSON.stringify(checked.issues))
  return checked.ok
}
const ok = (m: unknown, c: Partial<MappingContext> = {}) => {
  const mapped = mapMandate(valid(m), { ...ctx, ...c })
  if (mapped._tag === "Refused") throw new Error(JSON.stringify(mapped.problems))
  return mapped
}
const refused = (m: unknown, c: Partial<MappingContext> = {}) => {
  const mapped = mapMandate(valid(m), { ...ctx, ...c })
  assert.strictEqual(mapped._tag, "Refused")
  return mapped._tag === "Refused" ? mapped.problems : []
}

describe("AP2 schema", () => {
  it("accepts AP2's own example and refuses what the schema refuses", () => {
    // The example of docs/ap2/payment_mandate.md (AP2 v0.2), disclosed.
    valid(mandateOf([{ type: "payment.amount_range", currency: "USD", max: 20000, min: 0 }], { iat: 1777342357, exp: 1777345957 }))
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ ...mandateOf([]), vct: "mandate.payment.1" }, "mandate.vct"],
      [{ vct: "mandate.payment.open.1", constraints: [], cnf: {} }, "mandate.constraints"], // no payment.reference
      [mandateOf([{ type: "payment.amount_range", currency: "USD", max: 12.5 }]), "mandate.constraints[0]"], // minor units are integers
      [mandateOf([{ type: "payment.agent_recurrence", frequency: "HOURLY" }]), "mandate.constraints[0]"],
      [mandateOf([{ type: "payment.unknown" }]), "mandate.constraints[0]"],
      [{ constraints: [reference], cnf: {} }, "mandate"],
      ["not an object", "mandate"]
    ]
    for (const [m, where] of cases) {
      const checked = validateMandate(m)
      assert.isTrue("issues" in checked, JSON.stringify(m))
      if ("issues" in checked) assert.isTrue(checked.issues.some((i) => i.path.startsWith(where)), JSON.stringify(checked.issues))
    }
  })
})

describe("mapping", () => {
  it("a one-off mandate: amount_range is the per-action maximum and the total, one action, the payees the recipients", () => {
    const m = ok(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 1999, min: 0 },
      { type: "payment.allowed_payees", allowed: [{ id: alice, name: "Alice's shop" }, { id: bob.toUpperCase().replace("0X", "0x"), name: "Bob" }] }
    ]))
    assert.deepStrictEqual(m.input.budgets, [{ token: { symbol: "USDC" }, amount: 19.99 }])
    assert.deepStrictEqual(m.input.perActionMax, { token: { symbol: "USDC" }, amount: 19.99 })
    assert.strictEqual(m.input.maxActions, 1)
    assert.deepStrictEqual(m.input.recipientAllowlist?.map((r) => [r.address, r.name]), [[alice, "Alice's shop"], [bob, "Bob"]])
    assert.strictEqual(m.input.expiresAt, new Date(now.getTime() + 30 * 86_400_000).toISOString())
  })

  it("ON_DEMAND with a budget: budget the total, amount_range per action, max_occurrences the count; the window from execution_date", () => {
    const m = ok(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 300 },
      { type: "payment.budget", currency: "USD", max: 5.5 },
      { type: "payment.agent_recurrence", frequency: "ON_DEMAND", max_occurrences: 7 },
      { type: "payment.execution_date", not_before: "2026-12-08", not_after: "2026-12-20T10:00:00.5+01:00" }
    ]), { token: "usdt" })
    // not_before a date: that day's start; not_after inclusive: the chain's expiry is the next whole second.
    const start = Date.UTC(2026, 11, 8) / 1000
    const end = Date.parse("2026-12-20T09:00:01Z") / 1000
    assert.deepStrictEqual(m.input.budgets, [{ token: { symbol: "USDT" }, amount: 5.5, period: { seconds: end - start, start: new Date(start * 1000).toISOString() } }])
    assert.deepStrictEqual(m.input.perActionMax, { token: { symbol: "USDT" }, amount: 3 })
    assert.strictEqual(m.input.maxActions, 7)
    assert.strictEqual(m.input.expiresAt, new Date(end * 1000).toISOString())
    assert.strictEqual(m.input.notBefore, new Date(start * 1000).toISOString())
    assert.deepStrictEqual(m.input.recipientAllowlist, [])
  })

  it("a WEEKLY recurrence: one payment's maximum per week, held only when that stays within the budget", () => {
    const m = ok(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 2500 },
      { type: "payment.budget", currency: "USD", max: 100 },
      { type: "payment.agent_recurrence", frequency: "WEEKLY", max_occurrences: 4 }
    ]), { expiresAt: new Date((nowS + 60 * 86_400) * 1000).toISOString() })
    // The first week starts a minute back: the chain's clock may lag the service's.
    const weekStart = new Date(now.getTime() - 60_000).toISOString()
    assert.deepStrictEqual(m.input.budgets, [{ token: { symbol: "USDC" }, amount: 25, period: { every: "week", start: weekStart } }])
    assert.isUndefined(m.input.notBefore)
    assert.strictEqual(m.input.maxActions, 4)
    // 5 occurrences of 25 would be 125 > 100: refused on payment.budget, with what can be held.
    const over = refused(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 2500 },
      { type: "payment.budget", currency: "USD", max: 100 },
      { type: "payment.agent_recurrence", frequency: "WEEKLY", max_occurrences: 5 }
    ]), { expiresAt: new Date((nowS + 60 * 86_400) * 1000).toISOString() })
    assert.deepStrictEqual(over.map((p) => p.constraint), ["payment.budget"])
    assert.include(over[0]!.message, "a max_occurrences of at most 4")
    // BIWEEKLY over a 30-day default window: 3 periods of 10 within a budget of 30.
    const biweekly = ok(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 1000 },
      { type: "payment.budget", currency: "USD", max: 30 },
      { type: "payment.agent_recurrence", frequency: "BIWEEKLY" }
    ]))
    assert.deepStrictEqual(biweekly.input.budgets[0]!.period, { seconds: 1_209_600, start: weekStart })
  })

  it("the pre-set payee is the only recipient, and must be one of the allowed payees", () => {
    const m = ok(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 100 },
      { type: "payment.allowed_payees", allowed: [{ id: alice, name: "A" }, { id: bob, name: "B" }] }
    ], { payee: { id: bob, name: "B" } }))
    assert.deepStrictEqual(m.input.recipientAllowlist?.map((r) => r.address), [bob])
    const off = refused(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 100 },
      { type: "payment.allowed_payees", allowed: [{ id: alice, name: "A" }] }
    ], { payee: { id: bob, name: "B" } }))
    assert.deepStrictEqual(off.map((p) => p.constraint), ["payee"])
  })

  it("names every constraint the chain cannot hold, all at once", () => {
    const problems = refused(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 500, min: 100 },
      { type: "payment.budget", currency: "GBP", max: 10.001 },
      { type: "payment.agent_recurrence", frequency: "MONTHLY" },
      { type: "payment.allowed_payees", allowed: [{ id: "merchant_1", name: "Demo Merchant" }] },
      { type: "payment.allowed_payment_instruments", allowed: [{ id: "abe3c", type: "card" }] },
      { type: "payment.allowed_pisps", allowed: [{ legal_name: "L", brand_name: "B", domain_name: "d.example" }] },
      { type: "payment.execution_date", not_before: "yesterday" }
    ], { payment_amount: { amount: 100, currency: "USD" }, payment_instrument: { id: "x", type: "card" }, pisp: { legal_name: "L", brand_name: "B", domain_name: "d" } }))
    const named = problems.map((p) => `${p.constraint} ${p.path}`)
    for (const expected of [
      "payment.amount_range mandate.constraints[0].min",
      "payment.budget mandate.constraints[1].currency", // GBP next to USD
      "payment.budget mandate.constraints[1].max", // finer than a cent
      "payment.agent_recurrence mandate.constraints[2].frequency", // a calendar month
      "payment.allowed_payees mandate.constraints[3].allowed[0].id", // not an address
      "payment.allowed_payment_instruments mandate.constraints[4]",
      "payment.allowed_pisps mandate.constraints[5]",
      "payment.execution_date mandate.constraints[6].not_before",
      "payment_amount mandate.payment_amount",
      "payment_instrument mandate.payment_instrument",
      "pisp mandate.pisp"
    ]) assert.include(named, expected)
    // A currency that is no token here, a token that is not the currency's, a window already over.
    assert.deepStrictEqual(refused(mandateOf([{ type: "payment.amount_range", currency: "JPY", max: 100 }])).map((p) => p.constraint), ["payment.amount_range"])
    assert.include(refused(mandateOf([{ type: "payment.amount_range", currency: "USD", max: 100 }]), { token: "EURC" })[0]!.message, "not a USD stablecoin")
    assert.deepStrictEqual(refused(mandateOf([{ type: "payment.amount_range", currency: "USD", max: 100 }], { exp: nowS - 1 })).map((p) => p.path), ["mandate.exp"])
    assert.deepStrictEqual(refused(mandateOf([{ type: "payment.amount_range", currency: "USD", max: 0 }])).map((p) => p.path), ["mandate.constraints[0].max"])
    assert.deepStrictEqual(refused(mandateOf([])).map((p) => p.constraint), ["payment.amount_range"])
    // An amount beyond a double's exact range is refused, never rounded into a grant.
    assert.include(refused(mandateOf([{ type: "payment.amount_range", currency: "USD", max: 2 ** 60 }]))[0]!.message, "cannot be expressed exactly")
    assert.deepStrictEqual(
      refused(mandateOf([{ type: "payment.agent_recurrence", frequency: "DAILY" }])).map((p) => p.message),
      [
        "payment.agent_recurrence requires payment.amount_range (AP2)",
        "payment.agent_recurrence requires payment.budget (AP2)",
        "the mandate has neither payment.amount_range nor payment.budget: no amount limits it, and a grant always has one"
      ]
    )
  })

  it("NUL and 10 kB strings: a refusal that quotes them bounded, or names cleaned to 64 characters", () => {
    const long = "A".repeat(10_000)
    const problems = refused(mandateOf([
      { type: "payment.amount_range", currency: `US\u0000D${long}`, max: 100 },
      { type: "payment.allowed_payees", allowed: [{ id: `0x\u0000${long}`, name: long }] }
    ]))
    assert.deepStrictEqual(problems.map((p) => p.constraint), ["payment.amount_range", "payment.allowed_payees"])
    for (const p of problems) assert.isBelow(p.message.length, 300)
    assert.notInclude(problems.map((p) => p.message).join(""), "\u0000")
    const named = ok(mandateOf([
      { type: "payment.amount_range", currency: "USD", max: 100 },
      { type: "payment.allowed_payees", allowed: [{ id: alice, name: `Sh\u0000op\u202e ${long}` }] }
    ]))
    const name = named.input.recipientAllowlist![0]!.name
    assert.notInclude(name, "\u0000")
    assert.notInclude(name, "\u202e")
    assert.isAtMost(Array.from(name).length, 64)
  })
})

describe("hash", () => {
  it("is sha-256 of the RFC 8785 form: key order and number spelling do not change it, any claim does", () => {
    const a = mandateOf([{ type: "payment.amount_range", currency: "USD", max: 100 }])
    const reordered = JSON.parse(`{"cnf":{"jwk":{"y":"y","x":"x","crv":"P-256","kty":"EC"}},"constraints":[{"max":1e2,"currency":"USD","type":"payment.amount_range"},` +
      `{"conditional_transaction_id":"${reference.conditional_transaction_id}","type":"payment.reference"}],"vct":"mandate.payment.open.1"}`)
    assert.strictEqual(mandateHash(reordered), mandateHash(a))
    assert.strictEqual(mandateHash(a), `0x${createHash("sha256").update(canonicalize(a)!).digest("hex")}`)
    assert.notStrictEqual(mandateHash(mandateOf([{ type: "payment.amount_range", currency: "USD", max: 101 }])), mandateHash(a))
  })
})
