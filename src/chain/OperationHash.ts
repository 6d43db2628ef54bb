/**
 * Hashes of one user operation that more than one party computes: the paymaster's
 * `getHash` and the ERC-4337 v0.7 `userOpHash` both hash the operation's call data and init
 * code, which for a delegated action carry the whole permission context (a few KB; keccak in
 * JS costs ≈ 0.15 ms per KB). `keccakOfPart` hashes each such part once per build.
 */
import { type Address, encodeAbiParameters, type Hash, type Hex, keccak256 } from "viem"
import { toPackedUserOperation, type UserOperation } from "viem/account-abstraction"

/** Parts this long or longer are remembered (a short part costs less to hash than to look up). */
const REMEMBERED_FROM = 256
/** The last few parts hashed: one build hashes its call data twice, one after the other. */
const KEPT = 16
const kept = new Map<string, Hash>()

/** `keccak256(part)`, remembered for the last few long parts (keyed by the bytes themselves). */
export const keccakOfPart = (part: Hex): Hash => {
  if (part.length < REMEMBERED_FROM) return keccak256(part)
  const key = part.toLowerCase() as Hex
  const known = kept.get(key)
  if (known !== undefined) return known
  const hash = keccak256(key)
  kept.set(key, hash)
  if (kept.size > KEPT) kept.delete(kept.keys().next().value!)
  return hash
}

/**
 * The ERC-4337 v0.7 user-operation hash: viem's `getUserOperationHash` for v0.7 (the same
 * packing; pinned equal by test/chain/OperationHash.test.ts), its parts hashed by `keccakOfPart`.
 */
export const userOperationHashV07 = (op: UserOperation<"0.7">, chainId: number, entryPoint: Address): Hash => {
  const packed = toPackedUserOperation(op, { forHash: true })
  const inner = encodeAbiParameters(
    [
      { type: "address" }, { type: "uint256" }, { type: "bytes32" }, { type: "bytes32" },
      { type: "bytes32" }, { type: "uint256" }, { type: "bytes32" }, { type: "bytes32" }
    ],
    [
      packed.sender,
      packed.nonce,
      keccakOfPart(packed.initCode),
      keccakOfPart(packed.callData),
      packed.accountGasLimits,
      packed.preVerificationGas,
      packed.gasFees,
      keccakOfPart(packed.paymasterAndData)
    ]
  )
  return keccak256(encodeAbiParameters([{ type: "bytes32" }, { type: "address" }, { type: "uint256" }], [keccak256(inner), entryPoint, BigInt(chainId)]))
}
