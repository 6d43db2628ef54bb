/**
 * `wallet_getSupportedExecutionPermissions`, computed from what this deployment's enforcers can
 * hold: a permission type is listed for a chain only when every enforcer its grant needs
 * (Grant.ts `requiredEnforcers`, the same list a build checks) is deployed there, and a rule only
 * when its enforcer is. Pure. Mapping: docs/permissions.md.
 */
import { type Hex, toHex } from "viem"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { type GrantKind, requiredEnforcers } from "../delegations/Grant.ts"

/** The standard's answer: per permission type, the chains (hex) and the rule types it can carry. */
export type SupportedPermissions = Record<string, { readonly chainIds: ReadonlyArray<Hex>; readonly ruleTypes: ReadonlyArray<string> }>

/** Type, grant kind, and whether the basket is its only budget caveat (BasketPeriodEnforcer instead of MultiTokenPeriod). */
const KINDS: ReadonlyArray<readonly [string, GrantKind, boolean?]> = [
  ["native-token-stream", "native-stream"],
  ["native-token-periodic", "native"],
  ["native-token-allowance", "native"],
  ["erc20-token-stream", "erc20-stream"],
  ["erc20-token-periodic", "erc20"],
  ["erc20-token-allowance", "erc20"],
  // No budget: ApprovalRevocationEnforcer (both types: `erc20-token-revocation` is its erc20Approve primitive).
  ["erc20-token-revocation", "revocation"],
  ["token-approval-revocation", "revocation"],
  // This service's own: one USD allowance across stablecoins (docs/permissions.md).
  ["erc20-basket-periodic", "erc20", true]
]

export const supportedPermissions = (
  chains: ReadonlyArray<{ readonly chainId: number; readonly delegation: DelegationEnvironment }>
): SupportedPermissions => {
  const out: Record<string, { chainIds: Array<Hex>; ruleTypes: ReadonlyArray<string> }> = {}
  for (const { chainId, delegation } of chains) {
    const has = (names: ReadonlyArray<string>) => names.every((n) => delegation.caveatEnforcers[n] !== undefined)
    for (const [type, kind, basketOnly = false] of KINDS) {
      // Every grant names who may redeem (by default only its delegate): RedeemerEnforcer is part of the base.
      if (!has(requiredEnforcers(kind, { recipients: 0, redeemers: true, basketOnly }))) continue
      // A revocation grant pays no one: no payee rule.
      const payee = kind !== "revocation" && has(requiredEnforcers(kind, { recipients: 1, redeemers: true, basketOnly }))
      const ruleTypes = ["expiry", "redeemer", ...(payee ? ["payee"] : [])]
      const entry = out[type] ?? { chainIds: [], ruleTypes }
      entry.chainIds.push(toHex(chainId))
      // Several chains: the rules every one of them holds.
      entry.ruleTypes = entry.ruleTypes.filter((r) => ruleTypes.includes(r))
      out[type] = entry
    }
  }
  return out
}
