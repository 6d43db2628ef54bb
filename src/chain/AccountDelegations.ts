/**
 * What the account's own safety delegations (the panic key's, the recovery contract's) share
 * with every Delegation Framework delegation: the EIP-712 typed data a device signs, and the
 * delegate's `redeemDelegations` call. A device signs `hashTypedData(delegationTypedData(...))`
 * (an EOA its ECDSA, a passkey through `Devices.encodePasskeySignature`): the DelegationManager
 * checks it through the account's ERC-1271, i.e. against the account's signers at redemption.
 */
import { DelegationManager, HybridDeleGator } from "@metamask/delegation-abis"
import { type Delegation, ExecutionMode } from "@metamask/smart-accounts-kit"
import { encodeDelegations, encodeSingleExecution, SIGNABLE_DELEGATION_TYPED_DATA } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import { type Address, encodeFunctionData, hashTypedData, type Hex, type TypedDataDefinition } from "viem"
import type { Call } from "./Accounts4337.ts"
import { Chain } from "./Chain.ts"

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

/**
 * Whether the delegator's account accepts the delegation's signature now (ERC-1271, the check the
 * DelegationManager makes at each redemption). False once the device that signed it is no longer
 * a signer of the account: the delegation must then be signed again to be of any use.
 */
export const isDelegationSignatureValid = Effect.fn("AccountDelegations.isSignatureValid")(function*(
  delegation: Delegation,
  config: { readonly chainId: number; readonly delegationManager: Address }
) {
  const chain = yield* Chain
  if (!(yield* chain.isDeployed(delegation.delegator))) return false
  const digest = hashTypedData(delegationTypedData(delegation, config))
  const result = yield* chain.call({
    to: delegation.delegator,
    data: encodeFunctionData({ abi: HybridDeleGator, functionName: "isValidSignature", args: [digest, delegation.signature] })
  }).pipe(Effect.catchTag("CallReverted", () => Effect.succeed("0x" as Hex)))
  return result.slice(0, 10) === "0x1626ba7e"
})

export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
