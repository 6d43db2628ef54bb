/**
 * The approvals benchmark's gas part (bench/support/approval-gas.ts) at its smallest size, on the
 * run's local chain, so it cannot rot: every shape's redemption succeeds (it throws on a revert),
 * and the caveat's cost grows as it does more: no rule < at or below the threshold (no signature
 * checked) < 1 approval < 2 approvals. The figures themselves: `npx tsx bench/approvals.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { approvalGas } from "../../bench/support/approval-gas.ts"
import { testNetwork } from "../support/TestChain.ts"

describe("approvals bench: gas", () => {
  it("measures each shape once, cheapest without the rule, dearest with 2 approvals", { timeout: 120_000 }, async () => {
    const rows = await approvalGas(testNetwork(), 1)
    assert.deepStrictEqual(rows.map((r) => r.gas.length), [1, 1, 1, 1])
    const gas = rows.map((r) => r.gas[0]!)
    for (let i = 1; i < gas.length; i++) assert.isTrue(gas[i]! > gas[i - 1]!, `${rows[i]!.shape} (${gas[i]}) over ${rows[i - 1]!.shape} (${gas[i - 1]})`)
  })
})
