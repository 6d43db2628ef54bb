/**
 * Conversions between the contract's user operation (decimal strings, hex) and viem's
 * (bigints), the EIP-712 typed data in its JSON form, the operation hash, and the
 * mapping of chain/bundler faults onto the contract's error envelopes.
 */
import { Effect } from "effect"
import type { Address, Hash, Hex, TypedDataDefinition } from "viem"
import { ServiceUnavailable, UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import type { BundlerError, UserOperationV07 } from "../chain/Bundler.ts"
import type { ChainUnavailable } from "../chain/Chain.ts"
import { userOperationHashV07 } from "../chain/OperationHash.ts"
import type { Eip712TypedData, UserOperation } from "../domain/Operations.ts"

const lower = <S extends string>(s: S): S => s.toLowerCase() as S

/** viem's operation → the contract's shape (addresses and hex lowercase, numbers as decimal strings). */
export const toWire = (op: UserOperationV07, chainId: number, entryPoint: Address): UserOperation => ({
  sender: lower(op.sender),
  nonce: op.nonce.toString(),
  ...(op.factory !== undefined && op.factoryData !== undefined
    ? { factory: lower(op.factory), factoryData: lower(op.factoryData) }
    : {}),
  callData: lower(op.callData),
  callGasLimit: op.callGasLimit.toString(),
  verificationGasLimit: op.verificationGasLimit.toString(),
  preVerificationGas: op.preVerificationGas.toString(),
  maxFeePerGas: op.maxFeePerGas.toString(),
  maxPriorityFeePerGas: op.maxPriorityFeePerGas.toString(),
  ...(op.paymaster !== undefined
    ? {
      paymaster: lower(op.paymaster),
      paymasterVerificationGasLimit: (op.paymasterVerificationGasLimit ?? 0n).toString(),
      paymasterPostOpGasLimit: (op.paymasterPostOpGasLimit ?? 0n).toString(),
      paymasterData: lower(op.paymasterData ?? "0x")
    }
    : {}),
  signature: lower(op.signature),
  entryPoint: lower(entryPoint),
  chainId
})

/** The contract's shape → viem's operation. */
export const fromWire = (w: UserOperation): UserOperationV07 => ({
  sender: w.sender as Address,
  nonce: BigInt(w.nonce),
  ...(w.factory !== undefined ? { factory: w.factory as Address, factoryData: (w.factoryData ?? "0x") as Hex } : {}),
  callData: w.callData as Hex,
  callGasLimit: BigInt(w.callGasLimit),
  verificationGasLimit: BigInt(w.verificationGasLimit),
  preVerificationGas: BigInt(w.preVerificationGas),
  maxFeePerGas: BigInt(w.maxFeePerGas),
  maxPriorityFeePerGas: BigInt(w.maxPriorityFeePerGas),
  ...(w.paymaster !== undefined
    ? {
      paymaster: w.paymaster as Address,
      paymasterVerificationGasLimit: BigInt(w.paymasterVerificationGasLimit ?? "0"),
      paymasterPostOpGasLimit: BigInt(w.paymasterPostOpGasLimit ?? "0"),
      paymasterData: (w.paymasterData ?? "0x") as Hex
    }
    : {}),
  signature: w.signature as Hex
})

/** The ERC-4337 v0.7 user-operation hash (viem's packing; the call data's hash shared with the paymaster's), which the signature does not cover. */
export const userOpHashOf = (op: UserOperationV07, chainId: number, entryPoint: Address): Hash =>
  lower(userOperationHashV07({ ...op, signature: "0x" }, chainId, entryPoint))

/** Two operations are the same operation when every field the signature covers is equal. */
export const sameUnsigned = (a: UserOperation, b: UserOperation): boolean => {
  const strip = ({ signature: _s, ...rest }: UserOperation) =>
    JSON.stringify(Object.entries(rest).map(([k, v]) => [k, typeof v === "string" ? v.toLowerCase() : v]).sort())
  return strip(a) === strip(b)
}

/** The EIP-712 domain's type for a domain of name, version, chainId and verifyingContract. */
export const EIP712_DOMAIN_TYPE = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" }
] as const

/** viem typed data (bigints) → its `eth_signTypedData_v4` JSON form (decimal strings, `EIP712Domain` listed). */
export const typedDataJson = (td: TypedDataDefinition): Eip712TypedData => {
  const domain = td.domain as { name: string; version: string; chainId: number | bigint; verifyingContract: Address }
  const types = td.types as Record<string, ReadonlyArray<{ name: string; type: string }>>
  const message = td.message as Record<string, unknown>
  return {
    domain: {
      name: domain.name,
      version: domain.version,
      chainId: Number(domain.chainId),
      verifyingContract: lower(domain.verifyingContract)
    },
    types: {
      EIP712Domain: EIP712_DOMAIN_TYPE.map((f) => ({ ...f })),
      ...Object.fromEntries(Object.entries(types).map(([k, fields]) => [k, fields.map((f) => ({ name: f.name, type: f.type }))]))
    },
    primaryType: td.primaryType as string,
    message: Object.fromEntries(
      Object.entries(message).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : String(v).toLowerCase()])
    )
  }
}

/** How long a client should wait before trying a chain that is down again. */
const CHAIN_RETRY_AFTER_SECONDS = 5

/**
 * Chain and bundler faults (never a verdict on the operation): a chain whose node or bundler
 * is down is a 503 naming it (the other chains are served; at once while the chain is found
 * degraded, `ChainHealth.ts`), a node or bundler that did not answer within its chain's
 * timeout a 504, a bundler's refusal of a non-operation call a 502.
 */
export const upstreamError = (e: BundlerError | ChainUnavailable): UpstreamUnavailable | UpstreamTimeout | ServiceUnavailable => {
  const on = e._tag === "BundlerRejected" || e.chainId === undefined ? "" : ` of chain ${e.chainId}`
  const chain = e._tag === "BundlerRejected" || e.chainId === undefined
    ? {}
    : { chainId: e.chainId, retryAfterSeconds: CHAIN_RETRY_AFTER_SECONDS }
  switch (e._tag) {
    case "BundlerTimeout":
      return new UpstreamTimeout({ message: `The bundler${on} did not answer in time (${e.method})`, details: chain })
    case "BundlerUnavailable":
      return new ServiceUnavailable({ message: `The bundler${on} is unavailable (${e.method}): ${e.message}`, details: chain })
    case "BundlerRejected":
      return new UpstreamUnavailable({ message: `The bundler refused ${e.method}: ${e.message}` })
    case "ChainUnavailable":
      return e.timedOut === true
        ? new UpstreamTimeout({ message: `The node${on} did not answer in time (${e.operation})`, details: chain })
        : new ServiceUnavailable({ message: `The node${on} is unavailable (${e.operation}): ${e.message}`, details: chain })
  }
}

export const mapUpstream = <A, R>(
  effect: Effect.Effect<A, BundlerError | ChainUnavailable, R>
): Effect.Effect<A, UpstreamUnavailable | UpstreamTimeout | ServiceUnavailable, R> => Effect.mapError(effect, upstreamError)
