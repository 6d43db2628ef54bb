/**
 * The relay's rule for permit builds (pure): exactly the build's paymasterData prefix plus a
 * 65-byte permit signature, nothing else changed; and the client's step between the two
 * signatures recomputes the hash and the account's typed data.
 */
import { assert, describe, it } from "@effect/vitest"
import { concat, type Hex, hashTypedData } from "viem"
import { matchesBuild, permitMismatch, withPermitSignature } from "../../src/builds/GasPayment.ts"
import { fromWire, typedDataJson, userOpHashOf } from "../../src/builds/Wire.ts"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import { ENTRY_POINT_V07 } from "../../src/chain/Network.ts"
import { allowancePaymasterData, permitSignaturePrefix } from "../../src/chain/TokenPaymaster.ts"
import type { UserOpBuild, UserOperation } from "../../src/domain/Operations.ts"
import { testNetwork } from "../support/TestChain.ts"

const token = "0x998abeb3e57409262ae5b751f60747921b33613e" as const
const prefix = permitSignaturePrefix(token, 2_000_000n, 1_900_000_000n).toLowerCase() as Hex
const signature = `0x${"ab".repeat(64)}1b` as Hex

const built: UserOperation = {
  sender: "0x57eebc7b1e216fdeaef8b549612250317b3506e9",
  nonce: "3",
  callData: "0x1234",
  callGasLimit: "60000",
  verificationGasLimit: "250000",
  preVerificationGas: "75000",
  maxFeePerGas: "1000000000",
  maxPriorityFeePerGas: "1000000000",
  paymaster: "0x8f86403a4de0bb5791fa46b8e795c547942fe4cf",
  paymasterVerificationGasLimit: "150000",
  paymasterPostOpGasLimit: "80000",
  paymasterData: prefix,
  signature: "0x",
  entryPoint: ENTRY_POINT_V07.toLowerCase(),
  chainId: 31337
}
const permitBuild = { userOp: built, permitSignaturePrefix: prefix }
const submitted = (over: Partial<UserOperation>): UserOperation => ({
  ...built,
  paymasterData: concat([prefix, signature]),
  signature: `0x${"11".repeat(65)}`,
  ...over
})

describe("permit builds at the relay", () => {
  it("accepts the prefix followed by exactly 65 bytes", () => {
    assert.isTrue(matchesBuild(permitBuild, submitted({})))
    assert.isUndefined(permitMismatch(permitBuild, submitted({})))
  })

  it("refuses another prefix, a missing or longer signature, another mode, any other change", () => {
    const other = permitSignaturePrefix(token, 2_000_001n, 1_900_000_000n)
    for (
      const op of [
        submitted({ paymasterData: concat([other, signature]) }),
        submitted({ paymasterData: prefix }),
        submitted({ paymasterData: concat([prefix, signature, "0x00"]) }),
        submitted({ paymasterData: concat([prefix, "0x00"]) }),
        submitted({ paymasterData: allowancePaymasterData(token) }),
        submitted({ callGasLimit: "60001" }),
        submitted({ paymasterPostOpGasLimit: "1" }),
        submitted({ maxFeePerGas: "2000000000" })
      ]
    ) {
      assert.isFalse(matchesBuild(permitBuild, op))
      assert.include(permitMismatch(permitBuild, op) ?? "", "signaturePrefix")
    }
  })

  it("leaves other builds to the usual rule (every signed field equal)", () => {
    const plain = { userOp: { ...built, paymasterData: "0xdead" }, permitSignaturePrefix: undefined }
    assert.isTrue(matchesBuild(plain, { ...built, paymasterData: "0xdead", signature: "0x01" }))
    assert.isFalse(matchesBuild(plain, { ...built, paymasterData: "0xbeef", signature: "0x01" }))
    assert.isUndefined(permitMismatch(plain, { ...built, paymasterData: "0xbeef", signature: "0x01" }))
  })

  it("withPermitSignature: the attached operation's hash and the account's typed data, recomputed", () => {
    const network = testNetwork()
    const stack = makeHybridDeleGator({ chainId: 31337, entryPoint: ENTRY_POINT_V07, environment: network.delegation })
    const build = {
      userOp: built,
      userOpHash: userOpHashOf(fromWire(built), 31337, ENTRY_POINT_V07),
      gasPermit: { signaturePrefix: prefix },
      typedData: typedDataJson(stack.userOperationTypedData(fromWire(built)))
    } as unknown as UserOpBuild
    const attached = withPermitSignature(build, signature)
    assert.strictEqual(attached.userOp.paymasterData, concat([prefix, signature]).toLowerCase())
    assert.notStrictEqual(attached.userOpHash, build.userOpHash)
    assert.strictEqual(attached.userOpHash, userOpHashOf(fromWire(attached.userOp), 31337, ENTRY_POINT_V07))
    const { EIP712Domain: _, ...types } = attached.typedData!.types
    assert.strictEqual(
      hashTypedData({ ...attached.typedData!, types } as never),
      hashTypedData(stack.userOperationTypedData(fromWire(attached.userOp)))
    )
  })
})
