/** The console's words and figures (src/console/web/format.ts, contacts.ts): pure, so checked here without a browser. */
import { assert, describe, it } from "@effect/vitest"
import { quote } from "../../src/console/web/contacts.ts"
import { actionInWords, barShares, periodWords, shortAddress } from "../../src/console/web/format.ts"
import { grantRequest, parseRecipients } from "../../src/console/web/GrantForm.ts"

describe("the console's formatting", () => {
  it("draws spent then reserved, never past the bar", () => {
    assert.deepStrictEqual(barShares(40, 5, 15), { spent: 12.5, reserved: 37.5 })
    assert.deepStrictEqual(barShares(40, 30, 30), { spent: 75, reserved: 25 })
    assert.deepStrictEqual(barShares(40, 50, 10), { spent: 100, reserved: 0 })
    assert.deepStrictEqual(barShares(0, 5, 5), { spent: 0, reserved: 0 })
  })

  it("says periods in words", () => {
    assert.strictEqual(periodWords(undefined), "in total")
    assert.strictEqual(periodWords({ every: "week", seconds: 604800 }), "per week")
    assert.strictEqual(periodWords({ seconds: 7200 }), "per 2 hours")
    assert.strictEqual(periodWords({ seconds: 86400 }), "per day")
    assert.strictEqual(periodWords({ seconds: 45 }), "per 45 s")
  })

  it("shortens addresses and quotes others' names, bounded", () => {
    assert.strictEqual(shortAddress("0x00000000000000000000000000000000000005a1"), "0x0000…05a1")
    assert.strictEqual(quote("shop"), "“shop”")
    const long = quote("x".repeat(200))
    assert.strictEqual(long.length, 50)
    assert.isTrue(long.endsWith("…”"))
  })

  it("cleans others' names: one line, no override, zero-width or control character, no quote that closes ours", () => {
    assert.strictEqual(quote("Coffee; unlimited\nPer action: 1000000 USDC"), "“Coffee; unlimited Per action: 1000000 USDC”")
    assert.strictEqual(quote("\u202eredloh\u200b\u200dpay\ufeffpal\u0000"), "“redlohpaypal”")
    assert.strictEqual(quote("a” then ours “b"), "“a' then ours 'b”")
    assert.strictEqual(quote(`<img src=x onerror="alert(1)">`), "“<img src=x onerror='alert(1)'>”")
    const huge = quote("W".repeat(10_240))
    assert.strictEqual(Array.from(huge).length, 50)
    // A cut never splits a surrogate pair.
    assert.strictEqual(quote("😀".repeat(60)), `“${"😀".repeat(47)}…”`)
  })

  it("reads a request's entry by its step", () => {
    assert.strictEqual(actionInWords("approval_request", "pending"), "asked for approval to pay")
    assert.strictEqual(actionInWords("approval_request", "denied"), "denied paying")
    assert.strictEqual(actionInWords("grant_change_request", "accepted"), "accepted the request for more")
    assert.strictEqual(actionInWords("delegated_action", "executed"), "paid")
    assert.strictEqual(actionInWords("something_new"), "something new")
  })

  it("turns the grant form into a build request", () => {
    const me = "0x86987041e6ab7db5137ebef24eced596deb4b107"
    const request = grantRequest({
      name: " Groceries ", agent: "0x8dfa78684138ebfc30171f65a748dc19fa772c66", chainId: "31337", token: "USDC", amount: "40",
      period: "week", perAction: "20", recipients: "shop, 0x00000000000000000000000000000000000005a1\n0x00000000000000000000000000000000000005a2",
      threshold: "10", approvers: ""
    }, me)
    assert.deepStrictEqual(request, {
      name: "Groceries",
      kind: "agent",
      delegateeAddress: "0x8dfa78684138ebfc30171f65a748dc19fa772c66",
      chainId: 31337,
      budgets: [{ token: { symbol: "USDC" }, amount: 40, period: { every: "week" } }],
      perActionMax: { token: { symbol: "USDC" }, amount: 20 },
      recipientAllowlist: [
        { name: "shop", address: "0x00000000000000000000000000000000000005a1", chainId: 31337 },
        { name: "recipient 2", address: "0x00000000000000000000000000000000000005a2", chainId: 31337 }
      ],
      approval: { required: 1, approvers: [me], thresholds: [{ token: { symbol: "USDC" }, amount: 10 }] }
    })
    assert.throws(() => parseRecipients("shop, not-an-address", 1), /recipient line 1/)
  })
})
