/**
 * The operation hashes the builder computes itself, parts hashed once (src/chain/OperationHash.ts):
 * equal to viem's `getUserOperationHash` for v0.7 whatever the operation's shape, also when a
 * part's hash is answered from memory, and never another operation's.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Address, concat, type Hex, keccak256, toHex } from "viem"
import { getUserOperationHash, type UserOperation } from "viem/account-abstraction"
import { keccakOfPart, userOperationHashV07 } from "../../src/chain/OperationHash.ts"

const ENTRY_POINT: Address = "0x0000000071727De22E5E9d8BAf0edAc6f37da032"
const bytes = (n: number, seed: number): Hex => toHex(Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255))
const address = (seed: number) => bytes(20, seed) as Address

const op = (seed: number, options: { factory?: boolean; paymaster?: boolean; callDataBytes?: number }): UserOperation<"0.7"> => ({
  sender: address(seed),
  nonce: BigInt(seed) << 64n | 7n,
  ...(options.factory ? { factory: address(seed + 1), factoryData: bytes(300, seed) } : {}),
  callData: bytes(options.callDataBytes ?? 3_000, seed),
  callGasLimit: 300_000n + BigInt(seed),
  verificationGasLimit: 500_000n,
  preVerificationGas: 60_000n,
  maxFeePerGas: 2_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
  ...(options.paymaster
    ? { paymaster: address(seed + 2), paymasterVerificationGasLimit: 100_000n, paymasterPostOpGasLimit: 0n, paymasterData: bytes(77, seed) }
    : {}),
  signature: "0x"
})

const viemHash = (o: UserOperation<"0.7">, chainId: number) =>
  getUserOperationHash({ chainId, entryPointAddress: ENTRY_POINT, entryPointVersion: "0.7", userOperation: o })

describe("user-operation hash (v0.7)", () => {
  it("equals viem's for every shape: deployed or not, sponsored or not, short or long call data", () => {
    let seed = 1
    for (const factory of [false, true]) {
      for (const paymaster of [false, true]) {
        for (const callDataBytes of [0, 4, 200, 3_000]) {
          const o = op(seed++, { factory, paymaster, callDataBytes })
          for (const chainId of [31337, 31338]) {
            assert.strictEqual(userOperationHashV07(o, chainId, ENTRY_POINT), viemHash(o, chainId))
            // Again, its parts now remembered: the same answer.
            assert.strictEqual(userOperationHashV07(o, chainId, ENTRY_POINT), viemHash(o, chainId))
          }
        }
      }
    }
  })

  it("a remembered part is never another's: one byte changed, or the case of its hex, is hashed for what it is", () => {
    const data = bytes(3_000, 9)
    assert.strictEqual(keccakOfPart(data), keccak256(data))
    const changed = concat([data.slice(0, -2) as Hex, data.endsWith("00") ? "0x01" : "0x00"])
    assert.notStrictEqual(keccakOfPart(changed), keccakOfPart(data))
    assert.strictEqual(keccakOfPart(changed), keccak256(changed))
    assert.strictEqual(keccakOfPart(data.toUpperCase().replace("0X", "0x") as Hex), keccak256(data))
    // More parts than are kept, then the first again: still its own hash.
    for (let i = 0; i < 40; i++) keccakOfPart(bytes(400, 100 + i))
    assert.strictEqual(keccakOfPart(data), keccak256(data))
  })
})
