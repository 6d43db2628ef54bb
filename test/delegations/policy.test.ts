/** The pure policy: defaults, summary, and every decline reason of an action. */
import { assert, describe, it } from "@effect/vitest"
import { evaluate, makePolicySet, type PolicyState, POLICY_DEFAULTS, toUnits, TRANSFER_SELECTOR, visibleStatus } from "../../src/delegations/Policy.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryOf } from "./summaryOf.ts"

const USDC: Token = { chainId: 31337, symbol: "USDC", name: "USD Coin", address: "0x998abeb3e57409262ae5b751f60747921b33613e", decimals: 6 }
const USDT: Token = { chainId: 31337, symbol: "USDT", name: "Tether", address: "0x70e0ba845a1a0f2da3359c97e0285013525ffc49", decimals: 6 }
const now = new Date("2026-01-01T00:00:00.000Z")
const alice = "0x00000000000000000000000000000000000000a1"
const bob = "0x00000000000000000000000000000000000000b0"

const policyOf = (extra: Record<string, unknown> = {}, tokens: ReadonlyArray<Token> = [USDC]) => {
  const r = makePolicySet(
    { chainId: 31337, budgets: tokens.map((t) => ({ token: { symbol: t.symbol }, amount: 100 })), ...extra },
    tokens,
    now
  )
  if (r._tag !== "Ok") throw new Error(r.message)
  return r.policy
}
const state = (over: Partial<PolicyState> = {}): PolicyState => ({
  status: "active",
  accountFrozen: false,
  usedUnits: new Map(),
  actionsUsed: 0,
  ...over
})
const decimalsOf = () => 6

describe("policy defaults", () => {
  it("fills what the request leaves out", () => {
    const p = policyOf()
    assert.deepStrictEqual(p.budgets, [{ token: { symbol: "USDC", chainId: 31337, address: USDC.address }, amount: 100 }])
    assert.deepStrictEqual(p.perActionMax, { token: { symbol: "USDC", chainId: 31337, address: USDC.address }, amount: 100 })
    assert.strictEqual(p.maxActions, POLICY_DEFAULTS.maxActions)
    assert.deepStrictEqual(p.recipientAllowlist, [])
    assert.deepStrictEqual(p.allowedActions, [{ name: "USDC transfer", target: USDC.address, selectors: [TRANSFER_SELECTOR] }])
    assert.strictEqual(p.expiresAt, new Date(now.getTime() + POLICY_DEFAULTS.lifetimeMs).toISOString())
    assert.isTrue(p.freezeGated)
  })
  it("one allowed action per budget token", () => {
    const p = policyOf({}, [USDC, USDT])
    assert.deepStrictEqual(p.allowedActions.map((a) => a.target), [USDC.address, USDT.address])
  })
  it("refuses what cannot be honoured", () => {
    const bad = (extra: Record<string, unknown>, tokens: ReadonlyArray<Token> = [USDC]) =>
      makePolicySet({ chainId: 31337, budgets: tokens.map((t) => ({ token: { symbol: t.symbol }, amount: 100 })), ...extra }, tokens, now)._tag
    assert.strictEqual(bad({}, [USDC, USDC]), "Invalid")
    assert.strictEqual(bad({ perActionMax: { token: { symbol: "USDT" }, amount: 1 } }), "Invalid")
    assert.strictEqual(bad({ perActionMax: { token: { symbol: "USDC" }, amount: 0.0000001 } }), "Invalid")
    assert.strictEqual(bad({ expiresAt: "2025-12-31T00:00:00.000Z" }), "Invalid")
    assert.strictEqual(bad({ expiresAt: "2028-01-01T00:00:00.000Z" }), "Invalid")
    assert.strictEqual(bad({ recipientAllowlist: [{ name: "a", address: alice, chainId: 1 }] }), "Invalid")
    assert.strictEqual(bad({ recipientAllowlist: [{ name: "a", address: alice, chainId: 31337 }, { name: "A", address: bob, chainId: 31337 }] }), "Invalid")
    assert.strictEqual(bad({ allowedActions: [{ name: "x", target: bob, selectors: [TRANSFER_SELECTOR] }] }), "Invalid")
    assert.strictEqual(bad({ allowedActions: [{ name: "x", target: USDC.address, selectors: ["0x095ea7b3"] }] }), "Invalid")
    assert.strictEqual(makePolicySet({ chainId: 31337, budgets: [{ token: { symbol: "USDC" }, amount: -1 }] }, [USDC], now)._tag, "Invalid")
  })
  it("the shortest lifetime: a minute by default, configurable (DELEGATION_MIN_LIFETIME)", () => {
    const soon = { chainId: 31337, budgets: [{ token: { symbol: "USDC" }, amount: 1 }], expiresAt: new Date(now.getTime() + 5_000).toISOString() }
    assert.strictEqual(makePolicySet(soon, [USDC], now)._tag, "Invalid")
    assert.strictEqual(makePolicySet(soon, [USDC], now, 1_000)._tag, "Ok")
    assert.strictEqual(makePolicySet({ ...soon, expiresAt: new Date(now.getTime() + 500).toISOString() }, [USDC], now, 1_000)._tag, "Invalid")
  })
  it("amounts: token units to base units, refusing dust finer than the token", () => {
    assert.strictEqual(toUnits(2.5, 6), 2_500_000n)
    assert.strictEqual(toUnits(0.000001, 6), 1n)
    assert.isUndefined(toUnits(0.0000001, 6))
    assert.isUndefined(toUnits(0, 6))
    assert.isUndefined(toUnits(-3, 6))
    assert.strictEqual(toUnits(1e21, 6), 1_000_000_000_000_000_000_000_000_000n)
  })
})

describe("humanSummary", () => {
  it("states every limit", () => {
    const p = policyOf({
      perActionMax: { token: { symbol: "USDC" }, amount: 25 },
      maxActions: 3,
      recipientAllowlist: [{ name: "Alice", address: alice, chainId: 31337 }],
      expiresAt: "2026-01-15T12:30:00.000Z"
    })
    const s = summaryOf(p, bob, [USDC], { name: "Bot" })
    for (const part of ["100 USDC in total", "25 USDC per action", "3 actions", "only to " + alice, "2026-01-15 12:30 UTC", "transfer(address,uint256)", USDC.address, "revoke"]) {
      assert.include(s, part)
    }
    assert.include(s, `Recipient names given by the requester: ${alice} "Alice".`)
    assert.isTrue(s.endsWith(`Named by the requester: "Bot". Recipient names given by the requester: ${alice} "Alice".`))
    assert.include(summaryOf(policyOf(), bob, [USDC]), "to any recipient")
  })
})

describe("evaluate", () => {
  const p = policyOf({
    perActionMax: { token: { symbol: "USDC" }, amount: 25 },
    maxActions: 3,
    recipientAllowlist: [{ name: "Alice", address: alice, chainId: 31337 }]
  })
  const ev = (action: { recipient: string; amount: number; token?: string }, s: PolicyState = state(), at = now) => evaluate(p, decimalsOf, s, action, at)
  const reason = (e: ReturnType<typeof ev>) => e._tag === "Declined" ? e.reason : e._tag

  it("allows an action within every limit, by name or by address", () => {
    const byName = ev({ recipient: "alice", amount: 10 })
    assert.strictEqual(byName._tag, "Allowed")
    if (byName._tag === "Allowed") {
      assert.strictEqual(byName.recipient, alice)
      assert.strictEqual(byName.units, 10_000_000n)
      assert.strictEqual(byName.token.address, USDC.address)
      assert.strictEqual(byName.recipientName, "Alice")
    }
    assert.strictEqual(ev({ recipient: alice.toUpperCase().replace("0X", "0x"), amount: 25 })._tag, "Allowed")
  })
  it("declines with each reason", () => {
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 1 }, state({ status: "revoked" }))), "revoked")
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 1 }, state({ status: "pending" }))), "not_active")
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 1 }, state(), new Date(p.expiresAt))), "expired")
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 1 }, state({ accountFrozen: true }))), "account_frozen")
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 1, token: "DAI" })), "token_not_allowed")
    assert.strictEqual(reason(ev({ recipient: bob, amount: 1 })), "recipient_not_allowed")
    assert.strictEqual(reason(ev({ recipient: "Mallory", amount: 1 })), "recipient_not_allowed")
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 25.000001 })), "per_action_exceeded")
    assert.strictEqual(reason(ev({ recipient: "Alice", amount: 1 }, state({ actionsUsed: 3 }))), "count_exhausted")
    assert.strictEqual(
      reason(ev({ recipient: "Alice", amount: 20 }, state({ usedUnits: new Map([[USDC.address, 80_000_001n]]) }))),
      "cap_exceeded"
    )
    assert.strictEqual(ev({ recipient: "Alice", amount: 20 }, state({ usedUnits: new Map([[USDC.address, 80_000_000n]]) }))._tag, "Allowed")
    assert.strictEqual(ev({ recipient: "Alice", amount: 0 })._tag, "Invalid")
    assert.strictEqual(ev({ recipient: "Alice", amount: 0.0000001 })._tag, "Invalid")
  })
  it("an empty allowlist allows any address but no names", () => {
    const open = policyOf()
    assert.strictEqual(evaluate(open, decimalsOf, state(), { recipient: bob, amount: 1 }, now)._tag, "Allowed")
    const named = evaluate(open, decimalsOf, state(), { recipient: "bob", amount: 1 }, now)
    assert.strictEqual(named._tag === "Declined" ? named.reason : named._tag, "recipient_not_allowed")
  })
  it("the status a reader sees", () => {
    assert.strictEqual(visibleStatus("active", "2026-02-01T00:00:00.000Z", false, now), "active")
    assert.strictEqual(visibleStatus("active", "2026-02-01T00:00:00.000Z", true, now), "frozen")
    assert.strictEqual(visibleStatus("active", "2025-12-01T00:00:00.000Z", true, now), "expired")
    assert.strictEqual(visibleStatus("revoked", "2025-12-01T00:00:00.000Z", true, now), "revoked")
  })
})
