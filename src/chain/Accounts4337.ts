/**
 * The one place that knows the account stack: MetaMask Delegation Framework v1.3
 * HybridDeleGator accounts (owner EOA key) deployed through its SimpleFactory, call data
 * of `execute`, what the owner signs, and the delegation calls (`disableDelegation` /
 * `enableDelegation`) with the permission id they carry. Another stack would be another
 * layer of `AccountStack`.
 */
import { DelegationManager, HybridDeleGator } from "@metamask/delegation-abis"
import { type Delegation, ExecutionMode } from "@metamask/smart-accounts-kit"
import {
  encodeBatchExecution,
  getCounterfactualAccountData,
  hashDelegation,
  SIGNABLE_USER_OP_TYPED_DATA,
  toDelegation,
  toDelegationStruct
} from "@metamask/smart-accounts-kit/utils"
import { Context, Effect, Layer, Schema } from "effect"
import {
  type Address,
  decodeAbiParameters,
  decodeFunctionData,
  encodeFunctionData,
  type Hash,
  type Hex,
  pad,
  toHex,
  type TypedDataDefinition
} from "viem"
import { toPackedUserOperation, type UserOperation } from "viem/account-abstraction"
import { privateKeyToAccount } from "viem/accounts"
import { Network } from "./Network.ts"

export interface Call {
  readonly to: Address
  readonly value?: bigint
  readonly data?: Hex
}

export interface CounterfactualAccount {
  readonly address: Address
  /** For the operation's `factory` / `factoryData` while the account is not deployed. */
  readonly factory: Address
  readonly factoryData: Hex
}

export type { Delegation }

export class AccountStackError extends Schema.TaggedError<AccountStackError>()("AccountStackError", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/** The fields of a v0.7 operation that the owner's signature covers (everything but the signature). */
export type SignableUserOperation = Omit<UserOperation<"0.7">, "signature">

export class AccountStack extends Context.Service<AccountStack, {
  readonly name: string
  /** The account of `owner` at `index` (same owner, different index: a different account). */
  counterfactualAccount(owner: Address, index: bigint): Effect.Effect<CounterfactualAccount, AccountStackError>
  /** Call data of the account's own `execute` for one call or a batch. */
  encodeExecute(calls: ReadonlyArray<Call>): Hex
  /** The calls inside `execute` call data; `undefined` when it is not an `execute`. */
  decodeExecute(callData: Hex): ReadonlyArray<Call> | undefined
  /** A signature of the right shape for gas estimation. */
  readonly stubSignature: Hex
  /** The EIP-712 typed data the owner key signs for an operation of this account. */
  userOperationTypedData(op: SignableUserOperation): TypedDataDefinition
  /** Signs with a raw key (tests, scripts; the service itself never holds owner keys). */
  signUserOperation(privateKey: Hex, op: SignableUserOperation): Effect.Effect<Hex, AccountStackError>
  /** The permission id of a delegation: its DelegationManager hash (`getDelegationHash`). */
  permissionIdOf(delegation: Delegation): Hash
  /** Owner-account call data that disables (revokes) a delegation. */
  encodeDisableDelegation(delegation: Delegation): Hex
  encodeEnableDelegation(delegation: Delegation): Hex
  /** The permission id a revoke operation's own call data disables; `undefined` if it is not a revoke. */
  decodeRevokedPermissionId(callData: Hex): Hash | undefined
}>()("app/chain/AccountStack") {
  /** HybridDeleGator accounts of the MetaMask Delegation Framework, on the `Network` in context. */
  static readonly layerHybridDeleGator = Layer.effect(
    AccountStack,
    Network.useSync((network) =>
      makeHybridDeleGator({ chainId: network.chainId, entryPoint: network.entryPoint, environment: network.delegation })
    )
  )
}

/** The ECDSA stub the kit uses for HybridDeleGator estimation (r = s = 1, v = 27). */
const EOA_STUB_SIGNATURE: Hex =
  "0x000000000000000000000000000000000000000000000000000000000000000100000000000000000000000000000000000000000000000000000000000000011b"

const SINGLE_DEFAULT_MODE = ExecutionMode.SingleDefault as Hex
const BATCH_DEFAULT_MODE = ExecutionMode.BatchDefault as Hex

/** A Delegation Framework delegation as the `DelegationManager` ABI takes it. */
export const delegationArg = (d: Delegation) => {
  const s = toDelegationStruct(d)
  return {
    delegate: s.delegate,
    delegator: s.delegator,
    authority: s.authority,
    caveats: s.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms, args: c.args })),
    salt: s.salt,
    signature: s.signature
  }
}

export const makeHybridDeleGator = (config: {
  readonly chainId: number
  readonly entryPoint: Address
  readonly environment: {
    readonly SimpleFactory: Address
    readonly implementations: Readonly<Record<string, Address>>
  }
}): AccountStack["Service"] => {
  const counterfactualAccount = Effect.fn("AccountStack.counterfactualAccount")(function*(owner: Address, index: bigint) {
    const data = yield* Effect.tryPromise({
      try: () =>
        getCounterfactualAccountData({
          factory: config.environment.SimpleFactory,
          implementations: { ...config.environment.implementations },
          implementation: "Hybrid" as never,
          deployParams: [owner, [], [], []] as never,
          deploySalt: pad(toHex(index), { size: 32 })
        }),
      catch: (cause) => new AccountStackError({ message: "counterfactual address", cause })
    })
    return { address: data.address, factory: config.environment.SimpleFactory, factoryData: data.factoryData }
  })

  const encodeExecute = (calls: ReadonlyArray<Call>): Hex => {
    const executions = calls.map((c) => ({ target: c.to, value: c.value ?? 0n, callData: c.data ?? "0x" }))
    const [single] = executions
    if (executions.length === 1 && single !== undefined) {
      return encodeFunctionData({ abi: HybridDeleGator, functionName: "execute", args: [single] })
    }
    return encodeFunctionData({
      abi: HybridDeleGator,
      functionName: "execute",
      args: [BATCH_DEFAULT_MODE, encodeBatchExecution(executions)]
    })
  }

  const decodeExecute = (callData: Hex): ReadonlyArray<Call> | undefined => {
    try {
      const decoded = decodeFunctionData({ abi: HybridDeleGator, data: callData })
      if (decoded.functionName !== "execute") return undefined
      const args = decoded.args as ReadonlyArray<unknown>
      if (args.length === 1) {
        const e = args[0] as { target: Address; value: bigint; callData: Hex }
        return [{ to: e.target, value: e.value, data: e.callData }]
      }
      const [mode, executionCalldata] = args as [Hex, Hex]
      if (mode === SINGLE_DEFAULT_MODE) {
        // ERC-7579 single execution: target (20) | value (32) | callData
        const body = executionCalldata.slice(2)
        return [{ to: `0x${body.slice(0, 40)}`, value: BigInt(`0x${body.slice(40, 104)}`), data: `0x${body.slice(104)}` }]
      }
      if (mode !== BATCH_DEFAULT_MODE) return undefined
      const [executions] = decodeAbiBatch(executionCalldata)
      return executions.map((e) => ({ to: e.target, value: e.value, data: e.callData }))
    } catch {
      return undefined
    }
  }

  const userOperationTypedData = (op: SignableUserOperation): TypedDataDefinition => {
    const packed = toPackedUserOperation({ ...op, signature: "0x" } as UserOperation<"0.7">)
    return {
      domain: { chainId: config.chainId, name: "HybridDeleGator", version: "1", verifyingContract: op.sender },
      types: SIGNABLE_USER_OP_TYPED_DATA,
      primaryType: "PackedUserOperation",
      message: { ...packed, entryPoint: config.entryPoint }
    } as TypedDataDefinition
  }

  const signUserOperation = Effect.fn("AccountStack.signUserOperation")(function*(privateKey: Hex, op: SignableUserOperation) {
    return yield* Effect.tryPromise({
      try: () => privateKeyToAccount(privateKey).signTypedData(userOperationTypedData(op)),
      catch: (cause) => new AccountStackError({ message: "sign user operation", cause })
    })
  })

  const permissionIdOf = (delegation: Delegation): Hash => hashDelegation(delegation)

  const encodeDisableDelegation = (delegation: Delegation): Hex =>
    encodeFunctionData({ abi: HybridDeleGator, functionName: "disableDelegation", args: [delegationArg(delegation)] })

  const encodeEnableDelegation = (delegation: Delegation): Hex =>
    encodeFunctionData({ abi: HybridDeleGator, functionName: "enableDelegation", args: [delegationArg(delegation)] })

  const decodeRevokedPermissionId = (callData: Hex): Hash | undefined => {
    try {
      // Directly on the account, or wrapped in execute(DelegationManager.disableDelegation(...)).
      const direct = decodeFunctionData({ abi: HybridDeleGator, data: callData })
      if (direct.functionName === "disableDelegation") {
        return hashDelegation(toDelegation(direct.args[0] as Parameters<typeof toDelegation>[0]))
      }
      const inner = decodeExecute(callData)
      if (inner?.length === 1 && inner[0]?.data !== undefined) {
        const decoded = decodeFunctionData({ abi: DelegationManager, data: inner[0].data })
        if (decoded.functionName === "disableDelegation") {
          return hashDelegation(toDelegation(decoded.args[0] as Parameters<typeof toDelegation>[0]))
        }
      }
      return undefined
    } catch {
      return undefined
    }
  }

  return AccountStack.of({
    name: "metamask-delegation-framework/HybridDeleGator",
    counterfactualAccount,
    encodeExecute,
    decodeExecute,
    stubSignature: EOA_STUB_SIGNATURE,
    userOperationTypedData,
    signUserOperation,
    permissionIdOf,
    encodeDisableDelegation,
    encodeEnableDelegation,
    decodeRevokedPermissionId
  })
}

/** ERC-7579 batch execution calldata is `abi.encode(Execution[])` (the kit encodes, it has no decoder). */
const decodeAbiBatch = (executionCalldata: Hex) =>
  decodeAbiParameters(
    [{
      type: "tuple[]",
      components: [
        { name: "target", type: "address" },
        { name: "value", type: "uint256" },
        { name: "callData", type: "bytes" }
      ]
    }],
    executionCalldata
  ) as readonly [ReadonlyArray<{ target: Address; value: bigint; callData: Hex }>]
