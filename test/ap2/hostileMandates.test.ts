/**
 * AP2 mandates an attacker writes, pure: values AP2's schema lets through (any integer, any
 * string) that the mapping must refuse by name rather than throw on (a throw is a 500 at
 * `POST /ap2/payment-mandates/build`): a currency that names Object's prototype, an exp outside
 * any date, a 10 kB or bidi token name. Each ends as a Refused naming its constraint.
 */
import { assert, describe, it } from "@effect/vitest"
import { mapMandate, type MappingContext } from "../../src/ap2/Mapping.ts"
import { validateMandate } from "../../src/ap2/Schemas.ts"

const now = new Date("2026-12-07T12:00:00.000Z")
const ctx: MappingContext = {
  now,
  chainId: 31337,
  delegateeAddress: "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
  tokens: [{ symbol: "USDC", decimals: 6 }],
  minLifetimeMs: 60_000
}
const reference = { type: "payment.reference", conditional_transaction_id: "FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8" }
const mandateOf = (constraints: ReadonlyArray<Record<string, unknown>>, extra: Record<string, unknown> = {}) => ({
  vct: "mandate.payment.open.1",
  constraints: [...constraints, reference],
  cnf: { jwk: { kty: "EC", crv: "P-256", x: "x", y: "y" } },
  ...extra
})
const range = (currency: string) => ({ type: "payment.amount_range", currency, max: 100 })

/** The schema accepts it, and the mapping refuses it (never throws) naming `constraint`. */
const refusedBy = (mandate: unknown, constraint: string, c: Partial<MappingContext> = {}) => {
  const checked = validateMandate(mandate)
  if ("issues" in checked) throw new Error(`the schema refused it first: ${JSON.stringify(checked.issues)}`)
  const mapped = mapMandate(checked.ok, { ...ctx, ...c })
  assert.strictEqual(mapped._tag, "Refused")
  if (mapped._tag !== "Refused") return []
  assert.include(mapped.problems.map((p) => p.constraint), constraint)
  return mapped.problems
}

describe("AP2 mandates an attacker writes", () => {
  it("a currency naming Object's prototype (__proto__, toString, constructor, hasOwnProperty) is not a currency", () => {
    for (const code of ["__proto__", "toString", "constructor", "hasOwnProperty", "valueOf"]) {
      const problems = refusedBy(mandateOf([range(code)]), "payment.amount_range")
      assert.match(problems[0]!.message, /is not a token here/)
      assert.strictEqual(problems[0]!.path, "mandate.constraints[0].currency")
    }
    // The budget's currency the same.
    refusedBy(mandateOf([{ type: "payment.budget", currency: "__proto__", max: 5 }]), "payment.budget")
  })

  it("an exp outside any date (1e300, negative, past year 9999) is refused by name", () => {
    for (const exp of [1e300, -1, -1e20, 253_402_300_800, Number.MAX_SAFE_INTEGER]) {
      const problems = refusedBy(mandateOf([range("USD")], { exp }), "exp")
      assert.deepStrictEqual(problems.find((p) => p.constraint === "exp"), {
        constraint: "exp",
        path: "mandate.exp",
        message: "exp is not a time: unix seconds from 1970 to 9999 are"
      })
    }
    // A real exp still maps (an hour ahead).
    const checked = validateMandate(mandateOf([range("USD")], { exp: now.getTime() / 1000 + 3600 }))
    assert.isTrue("ok" in checked)
    if ("ok" in checked) assert.strictEqual(mapMandate(checked.ok, ctx)._tag, "Ok")
  })

  it("a hostile currency or token name comes back cleaned and bounded (no bidi, no NUL, 16 characters)", () => {
    const code = `US\u202eD\u0000${"x".repeat(10_000)}`
    const [problem] = refusedBy(mandateOf([range(code)]), "payment.amount_range")
    assert.notMatch(problem!.message, /[\u0000\u202e]/)
    assert.isBelow(problem!.message.length, 200)
    const token = `US\u202eDC\u0000${"y".repeat(60)}`
    const [tokenProblem] = refusedBy(mandateOf([range("USD")]), "payment.amount_range", { token })
    assert.notMatch(tokenProblem!.message, /[\u0000\u202e]/)
    assert.include(tokenProblem!.message, "is not a USD stablecoin")
    assert.isBelow(tokenProblem!.message.length, 200)
  })
})
