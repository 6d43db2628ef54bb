/**
 * One Delegation Framework delegation per grant, whose caveats make the chain enforce every
 * limit of the PolicySet for the whole grant (docs/onchain.md, "Which enforcer holds which
 * limit"). In the order the DelegationManager runs their `beforeHook`s (the first refusal
 * is the redemption's revert reason):
 *
 *   TimestampEnforcer          expiry (redeemable strictly before `expiresAt`)
 *   RedeemerEnforcer           who may redeem (`msg.sender` of redeemDelegations): the delegate,
 *                              or it and the named redeemers; none when redelegation is allowed
 *   ValueLteEnforcer           no native value (0 wei)
 *   AllowedTargetsEnforcer     only the allowed actions' targets (budget tokens)
 *   AllowedMethodsEnforcer     only `transfer(address,uint256)`
 *   AllowedCalldataEnforcer    one allowed recipient: the transfer's `to` word is pinned
 *   LogicalOrWrapperEnforcer   2+ allowed recipients: one group per recipient, each an
 *                              AllowedCalldataEnforcer pinning it; the redeemer picks the group
 *   TransferCapEnforcer        per-action maximum per token (ours: Enforcers.sol)
 *   LimitedCallsEnforcer       total action count, across every token (one delegation)
 *   MultiTokenPeriodEnforcer   total budget per token: one allowance per token whose single
 *                              period covers the grant's whole life (or, with a budget period,
 *                              an allowance that renews every period)
 *   ERC20StreamingEnforcer     instead of MultiTokenPeriod for a stream (the grant's only budget)
 *   BasketPeriodEnforcer       with a basket budget only: one allowance per period across every budget
 *                              token, each counted 1:1 after its decimals (ours: Basket.sol)
 *   ApprovalEnforcer           with an approval rule only: a transfer above its token's threshold
 *                              needs m of n approvers' signatures (ours: Approvals.sol). Last, so
 *                              the signatures are checked only once every other limit holds.
 *
 * A grant over the native coin (its only budget; Native.ts) is one transfer of value per action:
 *
 *   TimestampEnforcer, RedeemerEnforcer   as above
 *   ExactCalldataEnforcer      empty call data: the action only sends value
 *   AllowedTargetsEnforcer     the recipient allowlist (when there is one)
 *   ValueLteEnforcer           the per-action maximum
 *   LimitedCallsEnforcer       the action count
 *   NativeTokenPeriodTransferEnforcer / NativeTokenStreamingEnforcer   the budget
 *
 * Every budget enforcer above admits only a single call in the default execution mode, so a
 * batch can never count as one action.
 *
 * The redemption's caveat args (not signed) select the MultiTokenPeriod entry (the token's
 * index) and the LogicalOrWrapper group (the recipient's index), and carry the approvals:
 * `redeemArgs`.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder } from "@metamask/smart-accounts-kit/utils"
import { type Address, encodeAbiParameters, encodePacked, type Hex, pad } from "viem"
import { type ApprovalRule, approvalArgs, approvalTerms, type ApprovalSet, invalidRule } from "../chain/Approvals.ts"
import { basketTerms, MAX_BASKET_UNITS } from "../chain/Basket.ts"
import { basketUnits } from "./Baskets.ts"
import type { BasketBudget } from "./Domain.ts"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { approvalTermsOf } from "./ApprovalRule.ts"
import type { ApprovalRuleWire, Redeemers, RevocationMethods } from "./Domain.ts"
import { isNative } from "../tokens/Native.ts"
import { toUnits, TRANSFER_SELECTOR } from "./Policy.ts"
import { redeemerList } from "./Redeemers.ts"
import { caveatGroupsAbi } from "./SignedTerms.ts"
import { streamUnits } from "./Streams.ts"

/** Most recipients an allowlist may have: each is a LogicalOrWrapper group in the signed terms. */
export const MAX_RECIPIENTS = 32

export interface GrantBudget {
  readonly token: Address
  /** Allowance per period (the whole budget when there is no period). */
  readonly units: bigint
  /** Per-action maximum of this token, in its base units. */
  readonly perActionUnits: bigint
  /** A renewing allowance: period length and first period start (unix seconds). */
  readonly period?: { readonly seconds: number; readonly startSeconds: number }
  /** A stream whose maximum is `units`: initial amount, rate and start (unix seconds). */
  readonly stream?: { readonly initialUnits: bigint; readonly perSecondUnits: bigint; readonly startSeconds: number }
}

export interface GrantTerms {
  readonly delegator: Address
  readonly delegate: Address
  /** Every budget token, in PolicySet order (the MultiTokenPeriod entries). */
  readonly budgets: ReadonlyArray<GrantBudget>
  /** The allowed actions' targets (a subset of the budget tokens). */
  readonly targets: ReadonlyArray<Address>
  /** The recipient allowlist in PolicySet order; empty: any recipient. */
  readonly recipients: ReadonlyArray<Address>
  readonly maxActions: number
  /** When the grant's single lifetime allowance starts (unix seconds, at or before the enable). */
  readonly startSeconds: number
  /** Unix seconds; the TimestampEnforcer refuses redemptions at or after it. */
  readonly expiresAtSeconds: number
  /** Unix seconds; the TimestampEnforcer refuses redemptions at or before it (absent: 0, any time before the expiry). */
  readonly afterSeconds?: number
  readonly salt: Hex
  /**
   * Approvals above a threshold: each threshold names a budget token and is at most its
   * per-action maximum; a budget token without a threshold needs approvals for every transfer.
   */
  readonly approval?: ApprovalRule
  /** RedeemerEnforcer's list (the delegate first); absent: no redeemer caveat (redelegation allowed). */
  readonly redeemers?: ReadonlyArray<Address>
  /**
   * A basket budget: one allowance (18-decimals common unit) across `tokens`, every budget token,
   * renewing with the budgets' period (none: one period over the grant's life).
   */
  readonly basket?: {
    readonly units: bigint
    readonly tokens: ReadonlyArray<{ readonly token: Address; readonly decimals: number }>
    /** The grant's only budget caveat: no MultiTokenPeriod entries (each budget is the basket's amount, which it holds). */
    readonly only?: boolean
  }
}

/** What a redemption needs to pick its caveat args: the order of tokens and recipients in the terms. */
export interface GrantScope {
  readonly tokens: ReadonlyArray<Address>
  readonly recipients: ReadonlyArray<Address>
}

export type GrantResult =
  | { readonly _tag: "Ok"; readonly delegation: Delegation; readonly scope: GrantScope }
  | { readonly _tag: "Invalid"; readonly message: string }

/** The grant's shape: which budget enforcer holds it. */
export type GrantKind = "erc20" | "erc20-stream" | "native" | "native-stream" | "revocation"

export const grantKindOf = (budgets: ReadonlyArray<{ readonly token: string; readonly stream?: unknown }>): GrantKind => {
  const native = budgets.some((b) => isNative(b.token))
  const stream = budgets.some((b) => b.stream !== undefined)
  return native ? (stream ? "native-stream" : "native") : stream ? "erc20-stream" : "erc20"
}

/**
 * The enforcers a grant of `kind` needs, by the environment's names (the supported 7715
 * permissions are computed from this too: src/permissions/Erc7715.ts).
 */
export const requiredEnforcers = (
  kind: GrantKind,
  options: { readonly recipients: number; readonly redeemers: boolean; readonly basket?: boolean; readonly basketOnly?: boolean }
): ReadonlyArray<string> => {
  if (kind === "revocation") {
    return ["TimestampEnforcer", ...(options.redeemers ? ["RedeemerEnforcer"] : []), "ApprovalRevocationEnforcer", "LimitedCallsEnforcer"]
  }
  const erc20 = kind === "erc20" || kind === "erc20-stream"
  return [
    "TimestampEnforcer",
    ...(options.redeemers ? ["RedeemerEnforcer"] : []),
    ...(erc20
      ? ["ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer"]
      : ["ExactCalldataEnforcer", "ValueLteEnforcer", "LimitedCallsEnforcer", ...(options.recipients > 0 ? ["AllowedTargetsEnforcer"] : [])]),
    ...(erc20 && options.recipients > 0 ? ["AllowedCalldataEnforcer"] : []),
    ...(erc20 && options.recipients > 1 ? ["LogicalOrWrapperEnforcer"] : []),
    ...(kind === "erc20" && options.basketOnly === true ? [] : [{
      "erc20": "MultiTokenPeriodEnforcer",
      "erc20-stream": "ERC20StreamingEnforcer",
      "native": "NativeTokenPeriodTransferEnforcer",
      "native-stream": "NativeTokenStreamingEnforcer"
    }[kind]]),
    ...(options.basket === true || options.basketOnly === true ? ["BasketPeriodEnforcer"] : [])
  ]
}

/** A revocation-only grant's terms: no budget, only the approval-revocation primitives it may call. */
export interface RevocationTerms {
  readonly delegator: Address
  readonly delegate: Address
  readonly methods: RevocationMethods
  readonly maxActions: number
  readonly expiresAtSeconds: number
  readonly salt: Hex
  /** RedeemerEnforcer's list (the delegate first); absent: no redeemer caveat. */
  readonly redeemers?: ReadonlyArray<Address>
}

/**
 * The grant of a revocation-only policy: expiry, who may redeem, the ApprovalRevocationEnforcer
 * (each allowed primitive only sets an approval back to none: `approve(spender, 0)`, ...; any other
 * call, a transfer included, reverts) and the action count. Its scope names no token: no redemption
 * needs caveat args.
 */
export const makeRevocationGrant = (environment: DelegationEnvironment, terms: RevocationTerms): GrantResult => {
  const invalid = (message: string): GrantResult => ({ _tag: "Invalid", message })
  if (!Object.values(terms.methods).some((on) => on)) return invalid("a revocation grant allows at least one revocation method")
  if (terms.redeemers !== undefined && terms.redeemers.length === 0) return invalid("a redeemer list names at least the delegate")
  for (const name of requiredEnforcers("revocation", { recipients: 0, redeemers: terms.redeemers !== undefined })) {
    if (enforcerOf(environment, name) === undefined) return invalid(`this network has no ${name}: a revocation grant cannot be enforced on chain`)
  }
  try {
    const caveats = headOf(environment, terms)
      .addCaveat("approvalRevocation", { ...terms.methods })
      .addCaveat("limitedCalls", { limit: terms.maxActions })
      .build()
    return unsigned(terms, caveats, { tokens: [], recipients: [] })
  } catch (cause) {
    return invalid(`the kit refused a caveat: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
}

const selectedGroupAbi = [{
  type: "tuple",
  components: [{ name: "groupIndex", type: "uint256" }, { name: "caveatArgs", type: "bytes[]" }]
}] as const

/** AllowedCalldataEnforcer terms pinning `transfer`'s recipient word (after the 4-byte selector). */
const recipientTerms = (recipient: Address): Hex =>
  encodePacked(["uint256", "bytes32"], [4n, pad(recipient.toLowerCase() as Hex, { size: 32 })])

/** TransferCapEnforcer terms: token(20) ‖ maxAmount(32) per budget token. */
export const transferCapTerms = (budgets: ReadonlyArray<{ readonly token: Address; readonly perActionUnits: bigint }>): Hex =>
  encodePacked(
    budgets.flatMap(() => ["address", "uint256"] as const),
    budgets.flatMap((b) => [b.token, b.perActionUnits])
  )

const enforcerOf = (environment: DelegationEnvironment, name: string): Address | undefined => environment.caveatEnforcers[name]

/**
 * The grant's one delegation, unsigned (`signature: "0x"`), or why it cannot be expressed
 * on this network (an enforcer is not deployed, or a limit has no on-chain form).
 */
export const makeGrant = (environment: DelegationEnvironment, terms: GrantTerms): GrantResult => {
  const invalid = (message: string): GrantResult => ({ _tag: "Invalid", message })
  if (terms.budgets.length === 0 || terms.targets.length === 0) return invalid("a grant needs at least one budget token and one target")
  const kind = grantKindOf(terms.budgets)
  if (kind !== "erc20" && terms.budgets.length > 1) return invalid("a stream or an ETH budget must be the grant's only budget")
  if (terms.recipients.length > MAX_RECIPIENTS) {
    return invalid(`a recipient allowlist has at most ${MAX_RECIPIENTS} entries (each is enforced on chain)`)
  }
  if (terms.redeemers !== undefined && terms.redeemers.length === 0) return invalid("a redeemer list names at least the delegate")
  const needed = requiredEnforcers(kind, {
    recipients: terms.recipients.length,
    redeemers: terms.redeemers !== undefined,
    basket: terms.basket !== undefined,
    basketOnly: terms.basket?.only === true
  })
  for (const name of needed) {
    if (enforcerOf(environment, name) === undefined) {
      const what = name === "AllowedCalldataEnforcer" || name === "LogicalOrWrapperEnforcer"
        ? `a recipient allowlist${name === "LogicalOrWrapperEnforcer" ? " of 2 or more" : ""}`
        : name === "RedeemerEnforcer"
        ? "the choice of redeemers"
        : name === "BasketPeriodEnforcer"
        ? "a basket budget"
        : "the grant's limits"
      return invalid(`this network has no ${name}: ${what} cannot ${what === "the grant's limits" ? "all " : ""}be enforced on chain`)
    }
  }
  if (terms.budgets.some((b) => b.units <= 0n || b.perActionUnits <= 0n)) {
    return invalid("every budget and per-action maximum must be at least one base unit of its token")
  }
  const lifetime = terms.expiresAtSeconds - terms.startSeconds
  if (lifetime <= 0) return invalid("the grant expires before it starts")
  if (terms.approval !== undefined) {
    if (kind !== "erc20") return invalid("an approval rule holds ERC-20 transfers: it cannot go with a stream or an ETH budget")
    const invalidApproval = approvalProblem(environment, terms.budgets, terms.approval)
    if (invalidApproval !== undefined) return invalid(invalidApproval)
  }
  for (const b of terms.budgets) {
    if (b.period !== undefined && (b.period.seconds < 1 || b.period.startSeconds < 1 || b.period.startSeconds + b.period.seconds > terms.expiresAtSeconds)) {
      return invalid("a budget period must be at least a second, start after 1970 and end by the expiry")
    }
  }

  if (terms.basket !== undefined) {
    const problem = basketProblem(terms.budgets, terms.basket)
    if (kind !== "erc20" || problem !== undefined) return invalid(problem ?? "a basket holds ERC-20 budgets: not a stream or an ETH budget")
  }
  for (const b of terms.budgets) {
    if (b.stream !== undefined && (b.stream.perSecondUnits <= 0n || b.stream.initialUnits >= b.units || b.stream.startSeconds < 1)) {
      return invalid("a stream needs a positive rate, an initial amount below its maximum and a start after 1970")
    }
    if (b.stream !== undefined && b.stream.startSeconds >= terms.expiresAtSeconds) return invalid("a stream must start before the grant expires")
  }

  try {
    return kind === "erc20" || kind === "erc20-stream" ? grantOf(environment, terms, lifetime) : nativeGrantOf(environment, terms, lifetime)
  } catch (cause) {
    // The kit's term builders validate their input too: whatever they refuse is not expressible.
    return invalid(`the kit refused a caveat: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
}

const approvalProblem = (
  environment: DelegationEnvironment,
  budgets: ReadonlyArray<GrantBudget>,
  rule: ApprovalRule
): string | undefined => {
  if (enforcerOf(environment, "ApprovalEnforcer") === undefined) {
    return "this network has no ApprovalEnforcer: an approval rule cannot be enforced on chain"
  }
  const invalidApproval = invalidRule(rule)
  if (invalidApproval !== undefined) return invalidApproval
  for (const t of rule.thresholds) {
    const budget = budgets.find((b) => sameAddress(b.token, t.token))
    if (budget === undefined) return "an approval threshold names a budget token"
    if (rule.window === undefined && t.units > budget.perActionUnits) return "an approval threshold is at most the per-action maximum"
  }
  return undefined
}

/** A basket must name every budget token once (any other would be refused on chain) and share their one period. */
const basketProblem = (budgets: ReadonlyArray<GrantBudget>, basket: NonNullable<GrantTerms["basket"]>): string | undefined => {
  if (basket.units <= 0n || basket.units >= MAX_BASKET_UNITS) return "a basket's allowance is positive and below 2^192 base units"
  if (basket.tokens.some((t) => t.decimals < 0 || t.decimals > 18)) return "a basket counts tokens of at most 18 decimals"
  const named = new Set(basket.tokens.map((t) => t.token.toLowerCase()))
  if (named.size !== basket.tokens.length || named.size !== budgets.length || budgets.some((b) => !named.has(b.token.toLowerCase()))) {
    return "a basket names every budget token once"
  }
  // Without MultiTokenPeriod entries a budget is held only by the basket: it must not be below it.
  if (basket.only === true && budgets.some((b, i) => b.units * 10n ** BigInt(18 - basket.tokens[i]!.decimals) !== basket.units)) {
    return "a basket that is the grant's only budget has every budget at its amount"
  }
  const p = budgets[0]!.period
  const same = budgets.every((b) => p === undefined ? b.period === undefined : b.period?.seconds === p.seconds && b.period.startSeconds === p.startSeconds)
  return same ? undefined : "a basket's budgets share one period (or none)"
}

const grantOf = (environment: DelegationEnvironment, terms: GrantTerms, lifetime: number): GrantResult => {
  const wrapper = enforcerOf(environment, "LogicalOrWrapperEnforcer")
  const allowedCalldata = enforcerOf(environment, "AllowedCalldataEnforcer")
  const head = headOf(environment, terms)
    .addCaveat("valueLte", { maxValue: 0n })
    .addCaveat("allowedTargets", { targets: [...terms.targets] })
    .addCaveat("allowedMethods", { selectors: [TRANSFER_SELECTOR] })
    .build()
  const recipientCaveats = terms.recipients.length === 0
    ? []
    : terms.recipients.length === 1
    ? [{ enforcer: allowedCalldata!, terms: recipientTerms(terms.recipients[0]!), args: "0x" as Hex }]
    : [{
      enforcer: wrapper!,
      terms: encodeAbiParameters(caveatGroupsAbi, [
        terms.recipients.map((r) => ({ caveats: [{ enforcer: allowedCalldata!, terms: recipientTerms(r), args: "0x" as Hex }] }))
      ]),
      args: "0x" as Hex
    }]
  const cap = { enforcer: enforcerOf(environment, "TransferCapEnforcer")!, terms: transferCapTerms(terms.budgets), args: "0x" as Hex }
  const counted = createCaveatBuilder(environment as never).addCaveat("limitedCalls", { limit: terms.maxActions })
  const stream = terms.budgets[0]!.stream
  const tail = (terms.basket?.only === true
    ? counted
    : stream === undefined
    ? counted.addCaveat("multiTokenPeriod", {
      tokenConfigs: terms.budgets.map((b) => ({
        token: b.token,
        periodAmount: b.units,
        periodDuration: b.period?.seconds ?? lifetime,
        startDate: b.period?.startSeconds ?? terms.startSeconds
      }))
    })
    : counted.addCaveat("erc20Streaming", {
      tokenAddress: terms.budgets[0]!.token,
      initialAmount: stream.initialUnits,
      maxAmount: terms.budgets[0]!.units,
      amountPerSecond: stream.perSecondUnits,
      startTime: stream.startSeconds
    }))
    .build()
  const approval = terms.approval === undefined
    ? []
    : [{ enforcer: enforcerOf(environment, "ApprovalEnforcer")!, terms: approvalTerms(terms.approval) }]
  const period = terms.budgets[0]!.period
  const basket = terms.basket === undefined ? [] : [{
    enforcer: enforcerOf(environment, "BasketPeriodEnforcer")!,
    terms: basketTerms({
      units: terms.basket.units,
      periodSeconds: period?.seconds ?? lifetime,
      startSeconds: period?.startSeconds ?? terms.startSeconds,
      tokens: terms.basket.tokens
    })
  }]
  return ok(terms, [...head, ...recipientCaveats, cap, ...tail, ...basket, ...approval])
}

/** Expiry, then who may redeem: the first checks of every grant. */
const headOf = (
  environment: DelegationEnvironment,
  terms: { readonly expiresAtSeconds: number; readonly afterSeconds?: number; readonly redeemers?: ReadonlyArray<Address> | undefined }
) => {
  const timed = createCaveatBuilder(environment as never)
    .addCaveat("timestamp", { afterThreshold: terms.afterSeconds ?? 0, beforeThreshold: terms.expiresAtSeconds })
  return terms.redeemers === undefined ? timed : timed.addCaveat("redeemer", { redeemers: [...terms.redeemers] })
}

type Caveats = ReadonlyArray<{ readonly enforcer: Address; readonly terms: Hex }>

/** The unsigned root delegation of `caveats` from the delegator to the delegate, and what its redemptions name. */
const unsigned = (
  terms: Pick<GrantTerms, "delegate" | "delegator" | "salt">,
  caveats: Caveats,
  scope: Extract<GrantResult, { readonly _tag: "Ok" }>["scope"]
): GrantResult => ({
  _tag: "Ok",
  delegation: {
    delegate: terms.delegate,
    delegator: terms.delegator,
    authority: ROOT_AUTHORITY as Hex,
    caveats: caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms, args: "0x" as Hex })),
    salt: terms.salt,
    signature: "0x"
  },
  scope
})

const ok = (terms: GrantTerms, caveats: Caveats): GrantResult =>
  unsigned(terms, caveats, { tokens: terms.budgets.map((b) => b.token), recipients: [...terms.recipients] })

/** A grant over the native coin: each action sends value (no call data) to an allowed recipient. */
const nativeGrantOf = (environment: DelegationEnvironment, terms: GrantTerms, lifetime: number): GrantResult => {
  const budget = terms.budgets[0]!
  let builder = headOf(environment, terms).addCaveat("exactCalldata", { calldata: "0x" })
  if (terms.recipients.length > 0) builder = builder.addCaveat("allowedTargets", { targets: [...terms.recipients] })
  builder = builder
    .addCaveat("valueLte", { maxValue: budget.perActionUnits })
    .addCaveat("limitedCalls", { limit: terms.maxActions })
  builder = budget.stream === undefined
    ? builder.addCaveat("nativeTokenPeriodTransfer", {
      periodAmount: budget.units,
      periodDuration: budget.period?.seconds ?? lifetime,
      startDate: budget.period?.startSeconds ?? terms.startSeconds
    })
    : builder.addCaveat("nativeTokenStreaming", {
      initialAmount: budget.stream.initialUnits,
      maxAmount: budget.units,
      amountPerSecond: budget.stream.perSecondUnits,
      startTime: budget.stream.startSeconds
    })
  return ok(terms, builder.build())
}

const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * The signed grant with the caveat args one transfer needs (args are not signed: any
 * redeemer may set them, and the enforcers check the execution against the signed terms
 * whatever the args select), with its approvals when it has them. `undefined` when the
 * transfer is outside the scope.
 */
export const redeemArgs = (
  environment: DelegationEnvironment,
  grant: Delegation,
  scope: GrantScope,
  transfer: { readonly token: Address; readonly to: Address; readonly approvals?: ApprovalSet }
): Delegation | undefined => {
  const tokenIndex = scope.tokens.findIndex((t) => sameAddress(t, transfer.token))
  if (tokenIndex < 0) return undefined
  const recipientIndex = scope.recipients.findIndex((r) => sameAddress(r, transfer.to))
  if (scope.recipients.length > 0 && recipientIndex < 0) return undefined
  const period = environment.caveatEnforcers["MultiTokenPeriodEnforcer"]
  const wrapper = environment.caveatEnforcers["LogicalOrWrapperEnforcer"]
  const approvals = environment.caveatEnforcers["ApprovalEnforcer"]
  return {
    ...grant,
    caveats: grant.caveats.map((c) => {
      if (approvals !== undefined && transfer.approvals !== undefined && sameAddress(c.enforcer, approvals)) {
        return { ...c, args: approvalArgs(transfer.approvals) }
      }
      if (period !== undefined && sameAddress(c.enforcer, period)) {
        return { ...c, args: periodArgs(tokenIndex) }
      }
      if (wrapper !== undefined && sameAddress(c.enforcer, wrapper) && scope.recipients.length > 1) {
        return { ...c, args: logicalOrArgs(recipientIndex) }
      }
      return c
    })
  }
}

/**
 * The signed grant with caveat args that serve every redemption within its scope, or `undefined`
 * when the args depend on the redemption (2+ tokens pick a MultiTokenPeriod entry, 2+ recipients a
 * LogicalOrWrapper group). This is the delegation of a permission context an agent redeems as it
 * is (ERC-7710), whoever builds the redemption: a grant of one token and at most one recipient.
 */
export const standingGrant = (environment: DelegationEnvironment, grant: Delegation, scope: GrantScope): Delegation | undefined =>
  // No token, no recipient (a revocation-only grant): no caveat takes args.
  scope.tokens.length === 0 && scope.recipients.length === 0
    ? grant
    // Several tokens need args only to pick a MultiTokenPeriod entry; a basket-only grant has none.
    : (scope.tokens.length !== 1 && !(scope.tokens.length > 1 && !hasCaveat(environment, grant, "MultiTokenPeriodEnforcer"))) ||
        scope.recipients.length > 1
    ? undefined
    : redeemArgs(environment, grant, scope, { token: scope.tokens[0]!, to: scope.recipients[0] ?? (grant.delegate as Address) })

const hasCaveat = (environment: DelegationEnvironment, grant: Delegation, name: string) => {
  const address = environment.caveatEnforcers[name]
  return address !== undefined && grant.caveats.some((c) => sameAddress(c.enforcer, address))
}

/** LogicalOrWrapperEnforcer args selecting group `index` whose `caveats` caveats take no args. */
export const logicalOrArgs = (index: number, caveats = 1): Hex =>
  encodeAbiParameters(selectedGroupAbi, [{ groupIndex: BigInt(index), caveatArgs: Array.from({ length: caveats }, () => "0x" as Hex) }])

/** LogicalOrWrapperEnforcer terms: the groups of caveats, one of which a redemption must satisfy whole. */
export const logicalOrTerms = (
  groups: ReadonlyArray<ReadonlyArray<{ readonly enforcer: Address; readonly terms: Hex }>>
): Hex =>
  encodeAbiParameters(caveatGroupsAbi, [groups.map((g) => ({ caveats: g.map((c) => ({ enforcer: c.enforcer, terms: c.terms, args: "0x" as Hex })) }))])

/** MultiTokenPeriodEnforcer args selecting entry `index`. */
export const periodArgs = (index: number): Hex => encodeAbiParameters([{ type: "uint256" }], [BigInt(index)])

/** The grant's terms from a validated PolicySet (amounts to base units with each token's decimals). */
export const grantTermsOf = (
  policy: {
    readonly budgets: ReadonlyArray<{
      readonly token: { readonly address?: string | undefined }
      readonly amount: number
      readonly period?: { readonly seconds: number; readonly start: string }
      readonly stream?: { readonly perSecond: number; readonly initial: number; readonly start: string }
    }>
    readonly perActionMax: { readonly amount: number }
    readonly maxActions: number
    readonly recipientAllowlist: ReadonlyArray<{ readonly address: string }>
    readonly allowedActions: ReadonlyArray<{ readonly target: string }>
    readonly expiresAt: string
    readonly notBefore?: string
    readonly redeemers?: Redeemers
    readonly approval?: ApprovalRuleWire
    readonly basket?: BasketBudget
  },
  decimalsOf: (address: string) => number,
  parties: { readonly delegator: Address; readonly delegate: Address; readonly salt: Hex },
  /** A time the chain has reached (`startOnChain`): the lifetime allowance starts a minute before it. */
  now: Date
): GrantTerms | undefined => {
  const budgets: Array<GrantBudget> = []
  for (const b of policy.budgets) {
    const token = b.token.address?.toLowerCase() as Address | undefined
    if (token === undefined) return undefined
    const decimals = decimalsOf(token)
    const units = toUnits(b.amount, decimals)
    const perActionUnits = toUnits(policy.perActionMax.amount, decimals)
    if (units === undefined || perActionUnits === undefined) return undefined
    const period = b.period === undefined
      ? undefined
      : { seconds: b.period.seconds, startSeconds: Math.floor(new Date(b.period.start).getTime() / 1000) }
    const s = b.stream === undefined ? undefined : streamUnits(b.stream, b.amount, decimals)
    const stream = s === undefined ? undefined : { initialUnits: s.initial, perSecondUnits: s.perSecond, startSeconds: s.startSeconds }
    budgets.push({ token, units, perActionUnits, ...(period === undefined ? {} : { period }), ...(stream === undefined ? {} : { stream }) })
  }
  const redeemers = redeemerList(policy.redeemers, parties.delegate) as ReadonlyArray<Address> | undefined
  return {
    ...parties,
    budgets,
    targets: [...new Set(policy.allowedActions.map((a) => a.target.toLowerCase() as Address))],
    recipients: policy.recipientAllowlist.map((r) => r.address.toLowerCase() as Address),
    maxActions: policy.maxActions,
    // A minute before the chain's time: a chain's clock may differ from the service's a little.
    startSeconds: Math.floor(now.getTime() / 1000) - 60,
    expiresAtSeconds: Math.floor(new Date(policy.expiresAt).getTime() / 1000),
    // "From notBefore" is "strictly after the second before it" (TimestampEnforcer's afterThreshold).
    ...(policy.notBefore === undefined ? {} : { afterSeconds: Math.floor(new Date(policy.notBefore).getTime() / 1000) - 1 }),
    ...(redeemers === undefined ? {} : { redeemers }),
    ...(policy.approval === undefined ? {} : { approval: approvalTermsOf(policy.approval, decimalsOf) }),
    ...(policy.basket === undefined ? {} : { basket: basketTermsOf(policy.basket, decimalsOf) })
  }
}

/** The basket's allowance in the common unit and its tokens with their decimals (0 units: refused by makeGrant). */
const basketTermsOf = (basket: BasketBudget, decimalsOf: (address: string) => number): NonNullable<GrantTerms["basket"]> => ({
  units: basketUnits(basket.amount) ?? 0n,
  ...(basket.only === true ? { only: true } : {}),
  tokens: basket.tokens.map((t) => {
    const token = (t.address ?? "").toLowerCase() as Address
    return { token, decimals: decimalsOf(token) }
  })
})

/** A revocation-only grant's terms from its validated PolicySet. */
export const revocationTermsOf = (
  policy: { readonly maxActions: number; readonly expiresAt: string; readonly redeemers?: Redeemers },
  methods: RevocationMethods,
  parties: { readonly delegator: Address; readonly delegate: Address; readonly salt: Hex }
): RevocationTerms => {
  const redeemers = redeemerList(policy.redeemers, parties.delegate) as ReadonlyArray<Address> | undefined
  return {
    ...parties,
    methods,
    maxActions: policy.maxActions,
    expiresAtSeconds: Math.floor(new Date(policy.expiresAt).getTime() / 1000),
    ...(redeemers === undefined ? {} : { redeemers })
  }
}
