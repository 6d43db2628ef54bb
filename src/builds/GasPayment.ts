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
import { type Address, type Hex, maxUint256 } from "viem"
import { approvalCalls, PERMIT_SIGNATURE_LENGTH, splitPermitData } from "../chain/TokenPaymaster.ts"
import type { Eip712TypedData, UserOpBuild, UserOperation, UsdtApproval } from "../domain/Operations.ts"
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

/**
 * An allowance at or above this is "unlimited": the token paymaster's pre-charge never runs
 * it out (USDT and the local tokens do not decrease an allowance of 2^256 - 1).
 */
const UNLIMITED_ALLOWANCE = maxUint256 / 2n

/**
 * Gas by allowance (USDT): the token paymaster takes the maximum charge in validation, so
 * the allowance must exist BEFORE the operation; an `approve` batched into the operation's
 * own call data runs too late. When the allowance is not unlimited, the operation becomes
 * the allowance's setup: `approve(paymaster, 2^256 - 1)` (after `approve(paymaster, 0)` when
 * one exists) batched before the calls, its gas sponsored (docs/onchain.md "Paymaster and
 * gas"). Returns `undefined` when the allowance is already there (the operation pays in the
 * token), or when the account holds none of the token (nothing to pay with: no sponsored setup).
 */
export const allowanceSetup = (token: Address, paymaster: Address, currentAllowance: bigint, balance: bigint) => {
  // An account without the token gets no sponsored setup: its build pays in the token and is predicted to fail.
  if (currentAllowance >= UNLIMITED_ALLOWANCE || balance === 0n) return undefined
  const calls = approvalCalls(token, paymaster, maxUint256, currentAllowance)
  const usdtApproval: typeof UsdtApproval.Type = {
    token: token.toLowerCase(),
    paymaster: paymaster.toLowerCase(),
    amount: maxUint256.toString(),
    calls: calls.map((c) => ({ to: c.to.toLowerCase(), data: c.data.toLowerCase(), value: c.value.toString() }))
  }
  return { calls, usdtApproval }
}
