/**
 * The panic key (docs/account.md, "The panic key"): a delegation from the owner's account to a
 * trusted contact's or a cold key's account whose caveats let it freeze the account and do
 * nothing else, held on chain by two enforcers:
 *
 *   PanicFreezeEnforcer  (ours, src/chain/contracts/PanicFreeze.sol) each execution is exactly a
 *                        `DelegationManager.disableDelegation` of one of the account's
 *                        delegations that is neither the recovery contract's (`terms`) nor a
 *                        panic delegation, or the zero-value self-call that records a freeze
 *                        with nothing live; value 0; single call, default exec type
 *   RedeemerEnforcer     only the panic key's own account redeems (no sub-delegation)
 *
 * So the panic key cannot send or transfer, cannot re-enable (`enableDelegation`: unfreeze),
 * cannot call the account's own functions (signers, upgrades), cannot switch off the guardians'
 * recovery or another panic key, and what it disables the owner can re-enable: a freeze, never
 * a revocation. The owner replaces a panic key by disabling its delegation and signing a new one.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { type Delegation, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { type Address, concat, encodeFunctionData, type Hex } from "viem"
import { type Call, delegationArg } from "./Accounts4337.ts"
import { redeemCall, sameAddress } from "./AccountDelegations.ts"
import type { Checked } from "./Devices.ts"
import type { DelegationEnvironment } from "./Network.ts"

export interface PanicTerms {
  /** The owner's account. */
  readonly delegator: Address
  /** The panic key's own account (it redeems through its own operations). */
  readonly delegate: Address
  /** Delegates whose delegations the panic key may never disable: the Recovery contract. */
  readonly protectedDelegates: ReadonlyArray<Address>
  readonly salt: Hex
}

const enforcers = (environment: DelegationEnvironment) => ({
  panic: environment.caveatEnforcers["PanicFreezeEnforcer"],
  redeemer: environment.caveatEnforcers["RedeemerEnforcer"]
})

/** The panic delegation, unsigned (`signature: "0x"`), or why this network cannot hold it. */
export const makePanicDelegation = (environment: DelegationEnvironment, terms: PanicTerms): Checked<Delegation> => {
  const { panic, redeemer } = enforcers(environment)
  if (panic === undefined || redeemer === undefined) {
    return { _tag: "Invalid", field: "network", message: "this network has no PanicFreezeEnforcer or RedeemerEnforcer: a panic key cannot be held on chain" }
  }
  if (sameAddress(terms.delegate, terms.delegator)) {
    return { _tag: "Invalid", field: "panicKey", message: "the panic key is another account than the one it can freeze" }
  }
  return {
    _tag: "Ok",
    value: {
      delegate: terms.delegate,
      delegator: terms.delegator,
      authority: ROOT_AUTHORITY as Hex,
      caveats: [
        { enforcer: panic, terms: concat(["0x", ...terms.protectedDelegates]), args: "0x" },
        { enforcer: redeemer, terms: terms.delegate, args: "0x" }
      ],
      salt: terms.salt,
      signature: "0x"
    }
  }
}

/** Whether `delegation` is a panic delegation (a freeze must leave it alone; so must a grant list). */
export const isPanicDelegation = (environment: DelegationEnvironment, delegation: Pick<Delegation, "caveats">): boolean => {
  const { panic } = enforcers(environment)
  return panic !== undefined && delegation.caveats.some((c) => sameAddress(c.enforcer, panic))
}

/**
 * The panic key's call (from its own account): freeze the owner's account by disabling each of
 * `live` (the account's live grants; one redemption entry each, all or nothing: a delegation
 * already disabled reverts the whole call with `AlreadyDisabled`), or, with none, the
 * zero-value self-call of the account that records the freeze on chain.
 */
export const panicFreezeCall = (
  environment: DelegationEnvironment,
  panicDelegation: Delegation,
  live: ReadonlyArray<Delegation>
): Call => {
  const executions = live.length === 0
    ? [{ target: panicDelegation.delegator, value: 0n, callData: "0x" as Hex }]
    : live.map((d) => ({
      target: environment.DelegationManager,
      value: 0n,
      callData: encodeFunctionData({ abi: DelegationManager, functionName: "disableDelegation", args: [delegationArg(d)] })
    }))
  return redeemCall(environment.DelegationManager, panicDelegation, executions)
}
