/** Budget periods as pure functions (Periods.ts, Policy.ts, Grant.ts): validation, the current period, the summary, the decline. */
import { assert, describe, it } from "@effect/vitest"
import { type Address, hexToBigInt, slice, type Hex } from "viem"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import { grantTermsOf, makeGrant } from "../../src/delegations/Grant.ts"
import { currentPeriod, PERIOD_SECONDS, periodOf } from "../../src/delegations/Periods.ts"
import { evaluate, makePolicySet } from "../../src/delegations/Policy.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryOf } from "./summaryOf.ts"

const USDC: Token = { chainId: 31337, symbol: "USDC", name: "USD Coin", address: "0x00000000000000000000000000000000000000a1", decimals: 6 }
const now = new Date("2026-01-01T00:00:00.000Z")
const day = 86_400_000
const inDays = (n: number) => new Date(now.getTime() + n * day)

describe("periodOf", () => {
  it("day, week, 30-day month or seconds, from now or a given whole-second start", () => {
    assert.deepStrictEqual(periodOf({ every: "day" }, "USDC", now, inDays(10)), { every: "day", seconds: 86_400, start: now.toISOString() })
    assert.strictEqual((periodOf({ every: "month" }, "USDC", now, inDays(60)) as { seconds: number }).seconds, PERIOD_SECONDS.month)
    assert.deepStrictEqual(periodOf({ seconds: 90, start: "2026-01-01T00:00:05Z" }, "USDC", now, inDays(1)), {
      every: "seconds", seconds: 90, start: "2026-01-01T00:00:05.000Z"
    })
    assert.isUndefined(periodOf(undefined, "USDC", now, inDays(1)))
  })

  it("refuses both or neither of every/seconds, fractions, a sub-second start, and a period that does not fit the expiry", () => {
    for (const p of [{}, { every: "day" as const, seconds: 5 }, { seconds: 1.5 }, { seconds: 0 }, { seconds: 5, start: "2026-01-01T00:00:00.500Z" }, { seconds: 5, start: "nope" }]) {
      assert.isString(periodOf(p, "USDC", now, inDays(1)), JSON.stringify(p))
    }
    assert.include(periodOf({ every: "week" }, "USDC", now, inDays(6)) as string, "does not fit")
    assert.isObject(periodOf({ every: "week" }, "USDC", now, inDays(7)), "a period ending exactly at the expiry fits")
    assert.include(periodOf({ every: "day", start: inDays(1).toISOString() }, "USDC", now, inDays(1.5)) as string, "does not fit")
  })
})

describe("currentPeriod", () => {
  const p = { every: "seconds" as const, seconds: 10, start: "2026-01-01T00:00:00.000Z" }
  it("counts fixed periods from the start; before it, the first period has not started", () => {
    assert.deepStrictEqual(currentPeriod(p, new Date("2026-01-01T00:00:09.999Z")), { start: new Date("2026-01-01T00:00:00Z"), end: new Date("2026-01-01T00:00:10Z"), started: true })
    assert.deepStrictEqual(currentPeriod(p, new Date("2026-01-01T00:00:10Z")), { start: new Date("2026-01-01T00:00:10Z"), end: new Date("2026-01-01T00:00:20Z"), started: true })
    assert.isFalse(currentPeriod(p, new Date("2025-12-31T23:59:59Z")).started)
  })
})

describe("a period budget in the policy, the summary, the decline and the grant", () => {
  const made = makePolicySet(
    { chainId: 31337, budgets: [{ token: { symbol: "USDC" }, amount: 10, period: { every: "day" } }], expiresAt: inDays(30).toISOString() },
    [USDC],
    now
  )
  if (made._tag !== "Ok") throw new Error(made.message)
  const policy = made.policy

  it("the summary says the allowance per period, its start, and that nothing carries over", () => {
    const s = summaryOf(policy, "0x00000000000000000000000000000000000000d2", [USDC], { now })
    assert.include(s, "at most 10 USDC per day (periods of 86400 s from 2026-01-01 00:00:00 UTC; what is unspent does not carry over)")
    assert.notInclude(s, "in total,")
  })

  it("over the period's allowance: period_exceeded with the next period's start; within it: allowed", () => {
    const at = new Date(now.getTime() + 3_600_000)
    const state = (used: bigint) => ({ status: "active" as const, accountFrozen: false, usedUnits: new Map([[USDC.address, used]]), actionsUsed: 1 })
    const over = evaluate(policy, () => 6, state(9_000_000n), { recipient: USDC.address, amount: 2 }, at)
    assert.deepStrictEqual(over._tag === "Declined" ? [over.reason, over.resetsAt] : [over._tag], ["period_exceeded", inDays(1).toISOString()])
    assert.strictEqual(evaluate(policy, () => 6, state(9_000_000n), { recipient: USDC.address, amount: 1 }, at)._tag, "Allowed")
  })

  it("the grant's MultiTokenPeriod entry carries the allowance, the period and its start", () => {
    const env: DelegationEnvironment = {
      DelegationManager: "0x0000000000000000000000000000000000000001", EntryPoint: "0x0000000000000000000000000000000000000002",
      SimpleFactory: "0x0000000000000000000000000000000000000003", implementations: {},
      caveatEnforcers: Object.fromEntries(["TimestampEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer",
        "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer", "RedeemerEnforcer"].map((n, i) => [n, `0x${(0x100 + i).toString(16).padStart(40, "0")}` as Address]))
    }
    const terms = grantTermsOf(policy, () => 6, { delegator: USDC.address as Address, delegate: USDC.address as Address, salt: "0x01" }, now)!
    const g = makeGrant(env, terms)
    if (g._tag !== "Ok") throw new Error(g.message)
    const mtp = g.delegation.caveats.find((c) => c.enforcer === env.caveatEnforcers["MultiTokenPeriodEnforcer"])!.terms as Hex
    assert.deepStrictEqual([20, 52, 84].map((at) => hexToBigInt(slice(mtp, at, at + 32))), [10_000_000n, 86_400n, BigInt(now.getTime() / 1000)])
  })
})
