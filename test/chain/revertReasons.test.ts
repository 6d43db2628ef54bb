/** Revert data in words: enforcer strings, contract errors by name, a selector nothing knows. */
import { describe, expect, it } from "@effect/vitest"
import { DelegationManager } from "@metamask/delegation-abis"
import { encodeErrorResult, type Hex } from "viem"
import { decodeRevert, isRevertData } from "../../src/chain/RevertReasons.ts"

const errorString = (message: string): Hex =>
  encodeErrorResult({ abi: [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }], errorName: "Error", args: [message] })

describe("revert reasons", () => {
  it("an enforcer's Error(string) reads as its message", () => {
    expect(decodeRevert(errorString("ERC20TransferAmountEnforcer:allowance-exceeded"))).toBe("ERC20TransferAmountEnforcer:allowance-exceeded")
  })
  it("a DelegationManager error reads by name", () => {
    const data = encodeErrorResult({ abi: DelegationManager, errorName: "CannotUseADisabledDelegation" })
    expect(decodeRevert(data)).toBe("CannotUseADisabledDelegation")
  })
  it("a panic, an unknown selector and empty data", () => {
    expect(decodeRevert("0x4e487b710000000000000000000000000000000000000000000000000000000000000011")).toContain("Panic")
    expect(decodeRevert("0xdeadbeef")).toBe("custom error 0xdeadbeef")
    expect(decodeRevert("0x")).toBeUndefined()
    expect(isRevertData("0x08c3")).toBe(true)
    expect(isRevertData("reverted")).toBe(false)
  })
})
