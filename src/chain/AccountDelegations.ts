/**
 * What the account's own safety delegations (the panic key's, the recovery contract's) share
 * with every Delegation Framework delegation: the EIP-712 typed data a device signs, and the
 * delegate's `redeemDelegations` call. A device signs `hashTypedData(delegationTypedData(...))`
 * (an EOA its ECDSA, a passkey through `Devices.encodePasskeySignature`): the DelegationManager
 * checks it through the account's ERC-1271, i.e. against the account's signers at redemption.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { type Delegation, ExecutionMode } from "@metamask/smart-accounts-kit"
import { encodeDelegations, encodeSingleExecution, SIGNABLE_DELEGATION_TYPED_DATA } from "@metamask/smart-accounts-kit/utils"
import { type Address, encodeFunctionData, type Hex, type TypedDataDefinition } from "viem"
import type { Call } from "./Accounts4337.ts"

/** The typed data of a delegation for the DelegationManager at `delegationManager` on `chainId`. */
export const delegationTypedData = (
  delegation: Delegation,
  config: { readonly chainId: number; readonly delegationManager: Address }
): TypedDataDefinition =>
  ({
    domain: { name: "DelegationManager", version: "1", chainId: config.chainId, verifyingContract: config.delegationManager },
    types: SIGNABLE_DELEGATION_TYPED_DATA,
    primaryType: "Delegation",
    message: {
      delegate: delegation.delegate,
      delegator: delegation.delegator,
      authority: delegation.authority,
      caveats: delegation.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms })),
      salt: BigInt(delegation.salt)
    }
  }) as TypedDataDefinition

export interface Execution {
  readonly target: Address
  readonly value?: bigint
  readonly callData: Hex
}

/**
 * The delegate's call `DelegationManager.redeemDelegations`: one entry per execution, each a
 * single call in the default exec type under the same signed delegation (leaf first).
 */
export const redeemCall = (delegationManager: Address, delegation: Delegation, executions: ReadonlyArray<Execution>): Call => {
  const context = encodeDelegations([delegation])
  return {
    to: delegationManager,
    value: 0n,
    data: encodeFunctionData({
      abi: DelegationManager,
      functionName: "redeemDelegations",
      args: [
        executions.map(() => context),
        executions.map(() => ExecutionMode.SingleDefault as Hex),
        executions.map((e) => encodeSingleExecution({ target: e.target, value: e.value ?? 0n, callData: e.callData }))
      ]
    })
  }
}

export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
