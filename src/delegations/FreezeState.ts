/**
 * The freeze reads the chain (docs/relay.md "Freeze"): which legs the DelegationManager
 * has disabled decides the freeze, unfreeze and revoke calls at build time, so that
 * - the freeze disables every leg that can be live on chain, pending enables included
 *   (an enable mined but not yet settled is live: the service's record lags the chain);
 * - the unfreeze re-enables only legs that are disabled, and a revoke re-enables before
 *   disabling only legs that are disabled: `enableDelegation` of an enabled leg and
 *   `disableDelegation` of a disabled one revert (`AlreadyEnabled` / `AlreadyDisabled`),
 *   and one such call would revert the whole batch.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { Effect } from "effect"
import { type Address, decodeFunctionResult, type Hash, type Hex } from "viem"
import { mapUpstream } from "../builds/Wire.ts"
import type { Chain } from "../chain/Chain.ts"
import type { AccountStack } from "../chain/Accounts4337.ts"
import type { Call } from "../builds/OperationBuilder.ts"
import { type Delegation, disableCalls, disabledDelegationsCall, reenableCalls, revokeCallData } from "./Caveats.ts"

/** `DelegationManager.disabledDelegations(permissionId)`, read now. */
export const disabledOnChain = (chain: Chain["Service"], delegationManager: Address, permissionId: string) =>
  chain.call({ to: delegationManager, data: disabledDelegationsCall(permissionId as Hash) }).pipe(
    Effect.catchTag("CallReverted", (e) => Effect.die(e)),
    mapUpstream,
    Effect.map((data) => decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data }))
  )

export interface LegState {
  readonly permissionId: string
  readonly delegation: Delegation
  readonly disabled: boolean
}

/** Each leg with its on-chain disabled flag. */
export const legStates = (
  chain: Chain["Service"],
  delegationManager: Address,
  legs: ReadonlyArray<{ readonly permissionId: string; readonly delegation: Delegation }>
) =>
  Effect.forEach(legs, (leg) =>
    disabledOnChain(chain, delegationManager, leg.permissionId).pipe(
      Effect.map((disabled): LegState => ({ ...leg, disabled }))
    ), { concurrency: 4 })

/** The freeze disables what is enabled on chain; the unfreeze re-enables what is disabled. */
export const freezeCalls = (delegationManager: Address, states: ReadonlyArray<LegState>) => ({
  freeze: disableCalls(delegationManager, states.filter((s) => !s.disabled).map((s) => s.delegation)) as ReadonlyArray<Call>,
  unfreeze: reenableCalls(delegationManager, states.filter((s) => s.disabled).map((s) => s.delegation)) as ReadonlyArray<Call>
})

/**
 * Revoke call data from the chain's state: a leg enabled on chain is disabled; a disabled
 * one (frozen) is re-enabled and disabled again in the same operation, so that the revoke
 * carries every leg's `disableDelegation` and the relay reads the disabled ids as for any revoke.
 */
export const revokeCallDataOf = (
  stack: AccountStack["Service"],
  delegationManager: Address,
  states: ReadonlyArray<LegState>
): Hex =>
  states.every((s) => !s.disabled)
    ? revokeCallData(stack, delegationManager, states.map((s) => s.delegation))
    : stack.encodeExecute(states.flatMap((s) =>
      s.disabled
        ? [...reenableCalls(delegationManager, [s.delegation]), ...disableCalls(delegationManager, [s.delegation])]
        : disableCalls(delegationManager, [s.delegation])
    ))
