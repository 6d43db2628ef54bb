/**
 * Gas paid in stablecoins (docs/relay.md "Gas in stablecoins"): what a client does with a
 * permit build (the two-signature flow) and what the relay accepts for one.
 *
 * A `USDC` build's `userOp.paymasterData` is `gasPermit.signaturePrefix`; its `userOpHash`
 * and `typedData` cover that prefix and are stale. The client signs `gasPermit.permitDigest`
 * with the owner key (a raw secp256k1 signature of the digest, i.e. what
 * `eth_signTypedData_v4` of the token's EIP-2612 `Permit` gives), appends the 65 bytes to
 * the prefix as `paymasterData`, recomputes the hash and typed data (`withPermitSignature`),
 * signs the typed data and relays. The relay accepts exactly the build's prefix followed
 * by 65 bytes, every other signed field unchanged.
 */
import type { Hex } from "viem"
import { PERMIT_SIGNATURE_LENGTH, splitPermitData } from "../chain/TokenPaymaster.ts"
import type { Eip712TypedData, UserOpBuild, UserOperation } from "../domain/Operations.ts"
import { fromWire, sameUnsigned, userOpHashOf } from "./Wire.ts"

/** What the relay needs of a stored build to match a submission. */
export interface MatchableBuild {
  readonly userOp: UserOperation
  /** Set for a permit build: its `paymasterData`, to which exactly the 65-byte permit signature is appended. */
  readonly permitSignaturePrefix: string | undefined
}

/** A submitted operation is this build's when every signed field is the build's (a permit build: plus its permit signature). */
export const matchesBuild = (build: MatchableBuild, op: UserOperation): boolean => {
  const prefix = build.permitSignaturePrefix
  if (prefix === undefined) return sameUnsigned(build.userOp, op)
  const split = op.paymasterData === undefined ? undefined : splitPermitData(op.paymasterData as Hex)
  return split !== undefined && split.prefix.toLowerCase() === prefix.toLowerCase() &&
    sameUnsigned(build.userOp, { ...op, paymasterData: prefix })
}

/** Why a submission does not fit a permit build (400), or `undefined` (fits, or not a permit build). */
export const permitMismatch = (build: MatchableBuild, op: UserOperation): string | undefined =>
  build.permitSignaturePrefix === undefined || matchesBuild(build, op)
    ? undefined
    : `Gas is paid by permit: paymasterData must be the build's gasPermit.signaturePrefix followed by the ` +
      `${PERMIT_SIGNATURE_LENGTH}-byte permit signature, and nothing else may change`

/**
 * The client's step between the two signatures: the build's operation with the permit
 * signature attached, its recomputed `userOpHash` and the typed data to sign for it.
 */
export const withPermitSignature = (build: UserOpBuild, permitSignature: Hex) => {
  if (build.gasPermit === null) throw new Error("withPermitSignature: not a permit build")
  const paymasterData = `${build.gasPermit.signaturePrefix}${permitSignature.slice(2)}`.toLowerCase() as Hex
  const userOp: UserOperation = { ...build.userOp, paymasterData }
  const typedData = build.typedData as Eip712TypedData | undefined
  const message = typedData?.message ?? {}
  return {
    userOp,
    userOpHash: userOpHashOf(fromWire(userOp), userOp.chainId, userOp.entryPoint as Hex),
    typedData: typedData === undefined ? undefined : {
      ...typedData,
      // The account signs the packed operation: paymasterAndData = paymaster ‖ gas limits ‖ paymasterData.
      message: { ...message, paymasterAndData: `${message["paymasterAndData"]}${permitSignature.slice(2)}`.toLowerCase() }
    } satisfies Eip712TypedData
  }
}
