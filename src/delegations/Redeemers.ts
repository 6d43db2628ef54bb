/**
 * Who may redeem a grant, on chain: RedeemerEnforcer on the grant (the root of any chain of
 * delegations below it) checks `msg.sender` of `DelegationManager.redeemDelegations`, so a
 * delegation the delegate signs to anyone not listed reverts. Pure functions: the request's
 * choice validated, the addresses the caveat lists (the summary reads them back from the caveat: Summary.ts).
 * Rules: docs/delegations.md ("Redeemers").
 */
import type { Redeemers } from "./Domain.ts"

/** Most named redeemers (each is 20 bytes of the signed terms, and a comparison per redemption). */
export const MAX_REDEEMERS = 16

export interface RedeemersInput {
  readonly mode: "delegate" | "named" | "redelegation"
  readonly addresses?: ReadonlyArray<string>
}

const ZERO = "0x0000000000000000000000000000000000000000"
const isAddress = (s: string) => /^0x[0-9a-fA-F]{40}$/.test(s)

/** The policy's redeemers (default: the delegate only), or why the request is refused. */
export const redeemersOf = (input: RedeemersInput | undefined): Redeemers | string => {
  if (input === undefined || input.mode === "delegate" || input.mode === "redelegation") {
    if ((input?.addresses ?? []).length > 0) return `redeemers.addresses is only for mode "named"`
    return { mode: input?.mode ?? "delegate", addresses: [] }
  }
  const addresses = (input.addresses ?? []).map((a) => a.toLowerCase())
  if (addresses.length === 0) return `redeemers.addresses must name at least one redeemer besides the delegate (mode "named")`
  if (addresses.length > MAX_REDEEMERS) return `redeemers.addresses has at most ${MAX_REDEEMERS} entries`
  for (const a of addresses) {
    if (!isAddress(a) || a === ZERO) return `redeemers.addresses: ${a} is not an address that can redeem`
  }
  if (new Set(addresses).size !== addresses.length) return "redeemers.addresses lists an address twice"
  return { mode: "named", addresses }
}

/** The RedeemerEnforcer's list for a grant to `delegate` (the delegate first); `undefined`: no redeemer caveat. */
export const redeemerList = (redeemers: Redeemers | undefined, delegate: string): ReadonlyArray<string> | undefined => {
  if (redeemers === undefined || redeemers.mode === "redelegation") return undefined
  const d = delegate.toLowerCase()
  return [d, ...redeemers.addresses.map((a) => a.toLowerCase()).filter((a) => a !== d)]
}

/** The framework's "any delegate": a delegation to it is open to whoever holds it. */
export const ANY_DELEGATE = "0x0000000000000000000000000000000000000a11"

/**
 * Why `delegate` could never redeem a grant of `delegator`, or `undefined` when it can: an EOA
 * sends its own `redeemDelegations` transaction, a smart account (ours or not) calls it from an
 * operation. What cannot: no one holds the zero address's key; the framework's "any delegate"
 * would make the grant open to anyone (and no redeemer is that address); a grant to the account
 * itself limits nothing; the deployment's own contracts (DelegationManager, EntryPoint, factory,
 * enforcers, tokens, paymasters) never call the DelegationManager on anyone's behalf.
 */
export const delegateProblem = (
  delegate: string,
  delegator: string,
  deploymentContracts: ReadonlyArray<{ readonly name: string; readonly address: string }>
): string | undefined => {
  const d = delegate.toLowerCase()
  if (/^0x0{40}$/.test(d)) return "the zero address cannot redeem anything (no one holds its key)"
  if (d === ANY_DELEGATE) return `${ANY_DELEGATE} is the framework's "any delegate": a grant names one delegate here`
  if (d === delegator.toLowerCase()) return "the delegate is the granting account itself: such a grant would limit nothing"
  const contract = deploymentContracts.find((c) => c.address.toLowerCase() === d)
  if (contract !== undefined) return `the delegate is this deployment's ${contract.name}, which never redeems a delegation`
  return undefined
}
