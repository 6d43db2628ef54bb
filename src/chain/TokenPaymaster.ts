/**
 * The ERC-20 token paymaster (`contracts/TokenPaymaster.sol`): gas paid in the USD
 * stablecoin through an EIP-2612 permit carried in `paymasterData` (two signatures: the
 * permit, then the operation), or in the second stablecoin through an allowance, granted
 * if need be by an `approve` batched into the operation's own call data (one signature).
 * Every byte layout of its `paymasterData` lives here (docs/onchain.md).
 */
import { Effect } from "effect"
import {
  type Address,
  concat,
  encodeFunctionData,
  erc20Abi,
  type Hash,
  type Hex,
  hashTypedData,
  numberToHex,
  size,
  slice,
  type TypedDataDefinition
} from "viem"
import type { Chain } from "./Chain.ts"
import { ChainUnavailable } from "./Chain.ts"
import { tokenPaymasterAbi } from "./contracts/TokenPaymaster.ts"
import type { TokenInfo } from "./Network.ts"

export const MODE_ALLOWANCE = 0
export const MODE_PERMIT = 1
/** Estimation only: the contract does the allowance mode's work and answers "signature failed" (never executes). */
export const MODE_ESTIMATE = 2
/** The permit signature appended to the prefix: r ‖ s ‖ v. */
export const PERMIT_SIGNATURE_LENGTH = 65
/** mode(1) ‖ token(20) ‖ amount(32) ‖ deadline(6). */
export const PERMIT_PREFIX_LENGTH = 59

/**
 * Paymaster gas limits. Verification: the estimate (balance read) plus what the permit
 * costs (the token's permit, which calls the account's ERC-1271 check, and its storage
 * writes). postOp: the refund's `transfer`; the contract charges `postOpOverheadGas` (50k on
 * the local network) for it, which must stay below this limit.
 */
export const TOKEN_PAYMASTER_GAS = {
  // The balance and allowance reads and the pre-charge's transferFrom (cold storage writes).
  verificationFloor: 110_000n,
  permitExtra: 90_000n,
  postOp: 80_000n
} as const

/** Allowance mode: 0x00 ‖ token. */
export const allowancePaymasterData = (token: Address): Hex => concat([numberToHex(MODE_ALLOWANCE, { size: 1 }), token])

/** Permit mode without its signature: what `GasPermit.signaturePrefix` is. */
export const permitSignaturePrefix = (token: Address, amount: bigint, deadline: bigint): Hex =>
  concat([
    numberToHex(MODE_PERMIT, { size: 1 }),
    token,
    numberToHex(amount, { size: 32 }),
    numberToHex(deadline, { size: 6 })
  ])

/**
 * For estimation of an allowance operation: estimate mode (the allowance mode's work when
 * the allowance is there, and a "signature failed" answer, which estimation tolerates as it
 * does a stub signature and a real handleOps refuses).
 */
export const allowanceEstimationData = (token: Address): Hex => concat([numberToHex(MODE_ESTIMATE, { size: 1 }), token])

/**
 * For estimation of a permit operation: estimate mode, padded with non-zero bytes to the
 * permit data's length so the pre-verification gas covers the real operation's size.
 */
export const permitEstimationData = (token: Address): Hex =>
  concat([allowanceEstimationData(token), `0x${"ff".repeat(PERMIT_PREFIX_LENGTH + PERMIT_SIGNATURE_LENGTH - 21)}`])

/** Is `paymasterData` a permit prefix (a build's, before the permit signature is appended)? */
export const isPermitPrefix = (paymasterData: string): boolean =>
  paymasterData.length === 2 + 2 * PERMIT_PREFIX_LENGTH && paymasterData.slice(0, 4) === "0x01"

/** The prefix and signature of a signed permit `paymasterData`, when it has that shape. */
export const splitPermitData = (paymasterData: Hex): { prefix: Hex; signature: Hex } | undefined =>
  size(paymasterData) === PERMIT_PREFIX_LENGTH + PERMIT_SIGNATURE_LENGTH && paymasterData.slice(0, 4) === "0x01"
    ? { prefix: slice(paymasterData, 0, PERMIT_PREFIX_LENGTH), signature: slice(paymasterData, PERMIT_PREFIX_LENGTH) }
    : undefined

/** The EIP-2612 permit the owner signs: `owner` is the smart account (checked through its ERC-1271). */
export const permitTypedData = (args: {
  readonly chainId: number
  readonly token: TokenInfo
  readonly owner: Address
  readonly spender: Address
  readonly value: bigint
  readonly nonce: bigint
  readonly deadline: bigint
}): TypedDataDefinition => ({
  domain: { name: args.token.name, version: args.token.permitVersion ?? "1", chainId: args.chainId, verifyingContract: args.token.address },
  types: {
    Permit: [
      { name: "owner", type: "address" },
      { name: "spender", type: "address" },
      { name: "value", type: "uint256" },
      { name: "nonce", type: "uint256" },
      { name: "deadline", type: "uint256" }
    ]
  },
  primaryType: "Permit",
  message: { owner: args.owner, spender: args.spender, value: args.value, nonce: args.nonce, deadline: args.deadline }
})

export const permitDigest = (args: Parameters<typeof permitTypedData>[0]): Hash => hashTypedData(permitTypedData(args))

/** `approve(paymaster, amount)`; preceded by `approve(paymaster, 0)` when an allowance exists (USDT refuses non-zero → non-zero). */
export const approvalCalls = (token: Address, paymaster: Address, amount: bigint, currentAllowance: bigint) => [
  ...(currentAllowance > 0n
    ? [{ to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [paymaster, 0n] }) }]
    : []),
  { to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [paymaster, amount] }) }
]

/** `TokenPaymaster.tokenCost(token, wei)`: what the contract charges (and, for `maxCost`, requires). */
export const tokenCost = (chain: Chain["Service"], paymaster: Address, token: Address, wei: bigint) =>
  Effect.tryPromise({
    try: () => chain.client.readContract({ address: paymaster, abi: tokenPaymasterAbi, functionName: "tokenCost", args: [token, wei] }),
    catch: (cause) =>
      new ChainUnavailable({ operation: "tokenCost", message: cause instanceof Error ? cause.message : String(cause), cause })
  }).pipe(Effect.withSpan("TokenPaymaster.tokenCost"))
