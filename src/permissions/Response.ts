/**
 * ERC-7715 permissions out, as pure functions: the standard response of an enabled grant (the
 * permission context an agent redeems, the DelegationManager, the factory call that deploys a
 * counterfactual account first, the signer's account and the chain) and, for
 * `wallet_getGrantedExecutionPermissions`, a stored grant in the standard's shape when the
 * standard can state its limits exactly. Mapping: docs/permissions.md.
 */
import type { Rule } from "@metamask/7715-permission-types"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { encodeDelegations } from "@metamask/smart-accounts-kit/utils"
import { type Hex, toHex } from "viem"
import type { BasketSpent, PolicySet } from "../delegations/Domain.ts"
import { isNative } from "../tokens/Native.ts"
import { toUnits } from "../delegations/Policy.ts"
import { basketUnits } from "../delegations/Baskets.ts"
import { toUnitsOrZero } from "../delegations/Streams.ts"
import { MAX_ACTIONS, type MappedPermission, type MappedRequest, REVOCATION_METHODS } from "./Erc7715.ts"

/** The standard response; `from` (optional in a request) is always the granting account here. */
export type MappedResponse = MappedRequest & {
  readonly from: Hex
  context: Hex
  dependencies: Array<{ factory: Hex; factoryData: Hex }>
  delegationManager: Hex
  /** Beyond the standard, for `erc20-basket-periodic`: what the basket has spent and has left, in USD. */
  basketToDate?: BasketSpent
}

/**
 * The permission context an agent redeems: the signed grant alone (ABI `Delegation[]`, leaf first),
 * with the caveat args its redemptions need (Grant.ts `standingGrant`).
 */
export const permissionContext = (standingGrant: Delegation): Hex => encodeDelegations([standingGrant])

export interface Issued {
  /** The signed grant (the owner's signature in `signature`) with its standing caveat args (Grant.ts `standingGrant`). */
  readonly signedGrant: Delegation
  readonly delegationManager: Hex
  /** The owner's account (the delegator): the response's `from`. */
  readonly account: Hex
  /** The account's factory call while it is counterfactual; `undefined` once deployed. */
  readonly deployment?: { readonly factory: Hex; readonly factoryData: Hex }
}

/** `wallet_requestExecutionPermissions`' answer for one granted request. */
export const permissionResponse = (granted: MappedRequest, issued: Issued): MappedResponse => ({
  ...granted,
  from: issued.account.toLowerCase() as Hex,
  context: permissionContext(issued.signedGrant),
  dependencies: issued.deployment === undefined ? [] : [{ factory: issued.deployment.factory, factoryData: issued.deployment.factoryData }],
  delegationManager: issued.delegationManager
})

const seconds = (iso: string) => Math.floor(new Date(iso).getTime() / 1000)

/**
 * A stored grant as the standard states it, or `undefined` when the standard cannot state its
 * limits exactly (several budgets, a per-action maximum below the budget, a count below the
 * service's ceiling): such a grant is listed by the service's own reads, never in a shape that
 * says less than the chain holds.
 */
export const grantedRequest = (
  policy: PolicySet,
  grant: { readonly delegatee: string; readonly chainId: number; readonly decimals: number }
): MappedRequest | undefined => {
  if (policy.revocation !== undefined) return revocationRequest(policy, policy.revocation, grant)
  if (policy.basket?.only === true) return basketRequest(policy, policy.basket, grant)
  const [budget] = policy.budgets
  if (budget === undefined || policy.budgets.length !== 1 || budget.token.address === undefined) return undefined
  if (policy.perActionMax.amount !== budget.amount || policy.maxActions < MAX_ACTIONS) return undefined
  const units = (n: number) => toHex(toUnits(n, grant.decimals) ?? 0n)
  const native = isNative(budget.token.address)
  const prefix = native ? "native-token" : "erc20-token"
  const token = native ? {} : { tokenAddress: budget.token.address.toLowerCase() as Hex }
  const permission: MappedPermission = budget.stream !== undefined
    ? {
      type: `${prefix}-stream`,
      isAdjustmentAllowed: false,
      data: {
        ...token,
        amountPerSecond: units(budget.stream.perSecond),
        initialAmount: toHex(toUnitsOrZero(budget.stream.initial, grant.decimals) ?? 0n),
        maxAmount: units(budget.amount),
        startTime: seconds(budget.stream.start)
      }
    } as MappedPermission
    : budget.period !== undefined
    ? {
      type: `${prefix}-periodic`,
      isAdjustmentAllowed: false,
      data: { ...token, periodAmount: units(budget.amount), periodDuration: budget.period.seconds, startTime: seconds(budget.period.start) }
    } as MappedPermission
    : { type: `${prefix}-allowance`, isAdjustmentAllowed: false, data: { ...token, allowanceAmount: units(budget.amount) } } as MappedPermission
  const delegate = grant.delegatee.toLowerCase() as Hex
  const rules: Array<Rule> = [
    ...timeAndRedeemers(policy, delegate),
    ...(policy.recipientAllowlist.length === 0 ? [] : [{ type: "payee", data: { addresses: policy.recipientAllowlist.map((r) => r.address.toLowerCase()) } }])
  ]
  return { chainId: toHex(grant.chainId), to: delegate, permission, rules }
}

/**
 * A basket-only grant as `erc20-basket-periodic` (this service's type): only with a period (the type
 * has one), a per-action maximum of the whole amount and the service's count ceiling.
 */
const basketRequest = (
  policy: PolicySet,
  basket: NonNullable<PolicySet["basket"]>,
  grant: { readonly delegatee: string; readonly chainId: number }
): MappedRequest | undefined => {
  if (basket.period === undefined || policy.perActionMax.amount !== basket.amount || policy.maxActions < MAX_ACTIONS) return undefined
  const delegate = grant.delegatee.toLowerCase() as Hex
  const permission: MappedPermission = {
    type: "erc20-basket-periodic",
    isAdjustmentAllowed: false,
    data: {
      tokens: basket.tokens.map((t) => (t.address ?? "").toLowerCase() as Hex),
      periodAmount: toHex(basketUnits(basket.amount) ?? 0n),
      periodDuration: basket.period.seconds,
      startTime: seconds(basket.period.start)
    }
  }
  const rules: Array<Rule> = [
    ...timeAndRedeemers(policy, delegate),
    ...(policy.recipientAllowlist.length === 0 ? [] : [{ type: "payee", data: { addresses: policy.recipientAllowlist.map((r) => r.address.toLowerCase()) } }])
  ]
  return { chainId: toHex(grant.chainId), to: delegate, permission, rules }
}

/** The expiry and (unless redelegation is allowed) the redeemer rule: the delegate first. */
const timeAndRedeemers = (policy: PolicySet, delegate: Hex): Array<Rule> => [
  { type: "expiry", data: { timestamp: seconds(policy.expiresAt) } },
  ...(policy.redeemers === undefined || policy.redeemers.mode === "redelegation"
    ? []
    : [{ type: "redeemer", data: { addresses: [delegate, ...policy.redeemers.addresses.filter((a) => a.toLowerCase() !== delegate)] } }])
]

/**
 * A revocation grant in the standard's shape: `erc20-token-revocation` when ERC-20 approvals are
 * all it may revoke (what that type maps to), else `token-approval-revocation` with its six
 * primitives; only with the service's count ceiling (the standard has no count).
 */
const revocationRequest = (
  policy: PolicySet,
  methods: NonNullable<PolicySet["revocation"]>,
  grant: { readonly delegatee: string; readonly chainId: number }
): MappedRequest | undefined => {
  if (policy.maxActions < MAX_ACTIONS) return undefined
  const erc20Only = REVOCATION_METHODS.every((m) => methods[m] === (m === "erc20Approve"))
  const permission: MappedPermission = erc20Only
    ? { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} }
    : { type: "token-approval-revocation", isAdjustmentAllowed: false, data: { ...methods } }
  const delegate = grant.delegatee.toLowerCase() as Hex
  return { chainId: toHex(grant.chainId), to: delegate, permission, rules: timeAndRedeemers(policy, delegate) }
}
