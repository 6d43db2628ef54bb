/**
 * ERC-7715 permission requests in (`wallet_requestExecutionPermissions`, types of
 * `@metamask/7715-permission-types`), as pure functions: a request as the standard's wire carries
 * it (what the kit's `erc7715ProviderActions` sends: hex amounts in base units, seconds, rules)
 * decoded and checked field by field (Wire.ts), then mapped to the service's build input, whose grant the
 * chain holds exactly (Grant.ts). What the chain cannot hold exactly is refused naming the field
 * and listing what is supported, never granted with less. Mapping and proofs: docs/permissions.md.
 */
import { cleanOutsideText } from "../domain/OutsideText.ts"
import type { Rule } from "@metamask/7715-permission-types"
import { formatUnits, type Hex, toHex } from "viem"
import type { BuildInput } from "../delegations/Enable.ts"
import { isNative, NATIVE_SYMBOL } from "../tokens/Native.ts"
import { PERIOD_SECONDS } from "../delegations/Periods.ts"
import { POLICY_DEFAULTS, toUnits } from "../delegations/Policy.ts"
import { MAX_REDEEMERS } from "../delegations/Redeemers.ts"
import { toUnitsOrZero } from "../delegations/Streams.ts"
import type { Token } from "../tokens/TokenRegistry.ts"
import type { SupportedPermissions } from "./Supported.ts"
import { MAX_BASKET_UNITS } from "../chain/Basket.ts"
import { USD_STABLECOINS } from "../delegations/Baskets.ts"
import {
  BASKET_TYPE,
  type Decoded,
  decodeRequest,
  isRevocationType,
  type MappedPermission,
  type MappedRequest,
  REVOCATION_METHODS,
  type Refusal,
  refuse
} from "./Wire.ts"

/** Action count of a 7715 grant: the standard has none, so the service's ceiling (stated in the summary). */
export const MAX_ACTIONS = 1_000_000

export {
  type Decoded,
  decodeRequest,
  MAPPED_TYPES,
  type MappedPermission,
  type MappedRequest,
  type MappedType,
  MAX_PERIOD_SECONDS,
  type Refusal,
  REVOCATION_METHODS,
  REVOCATION_TYPES,
  RULE_TYPES
} from "./Wire.ts"

// ---------------------------------------------------------------------------------------
// Request → the service's build input

export interface MappingContext {
  /** The chains this service serves. */
  readonly chainIds: ReadonlyArray<number>
  /** What this deployment's enforcers can hold (Supported.ts). */
  readonly supported: SupportedPermissions
  readonly now: Date
  /**
   * A time the chain has reached (`startOnChain`: the latest block's, when older than `now`): a
   * periodic permission without `startTime` starts there, so the chain reads it as started.
   * Absent: `now`. A stream still starts at `now` (it accrues from its start).
   */
  readonly startOnChain?: Date
  /** A known ERC-20 token by chain and address (the token registry). */
  readonly tokenOf: (chainId: number, address: string) => Token | undefined
  /** The known ERC-20 tokens of a chain (for the refusal's message). */
  readonly knownTokens: (chainId: number) => ReadonlyArray<Token>
  /** The requesting signer's account: `from`, when given, must be it. */
  readonly account?: string
  /** Shortest grant lifetime accepted (`DELEGATION_MIN_LIFETIME`). */
  readonly minLifetimeMs?: number
}

/**
 * A field the grant holds other than the request asked (only with `isAdjustmentAllowed: true`;
 * with `false` the request is refused naming the field). Amounts in base units, as the wire has them.
 */
export interface Adjustment {
  /** The request's field (`permission.data.maxAmount`). */
  readonly field: string
  readonly requested: string
  readonly granted: string
  readonly reason: string
}

export interface Mapped {
  readonly _tag: "Ok"
  /** What `POST /delegations/build` takes (less `accountId`). */
  readonly input: BuildInput
  /** The request as granted: data with its defaults filled in, the rules the grant holds (expiry, redeemer, payee). */
  readonly granted: MappedRequest
  /** What the grant holds differently from the request (empty unless the request allowed adjustment). */
  readonly adjustments: ReadonlyArray<Adjustment>
}

/** Base units → the service's token units, only when a JSON number carries them exactly. */
const exact = (units: bigint, decimals: number, field: string, zeroOk = false): Decoded<number> => {
  const amount = Number(formatUnits(units, decimals))
  const back = zeroOk ? toUnitsOrZero(amount, decimals) : toUnits(amount, decimals)
  return back === units
    ? { _tag: "Ok", value: amount }
    : refuse(field, `${field} (${units} base units) cannot be held exactly by this service's amounts (at most 15 significant digits)`)
}

const iso = (s: number) => new Date(s * 1000).toISOString()
/** A period in the service's words: a day, a week and a 30-day month by name (the summary says them so). */
const periodOf = (seconds: number, start: number) => {
  const every = (Object.entries(PERIOD_SECONDS) as ReadonlyArray<[keyof typeof PERIOD_SECONDS, number]>).find(([, s]) => s === seconds)?.[0]
  return every === undefined ? { seconds, start: iso(start) } : { every, start: iso(start) }
}
const hexOf = (x: unknown) => BigInt(x as string)

/**
 * The build input whose grant holds exactly what `request` asks (docs/permissions.md):
 * - periodic: a period budget (a period longer than the grant's life is one period to the
 *   expiry: the chain allows nothing after it anyway); allowance: the amount over the grant's
 *   life (from `startTime` when it is in the future); stream: a stream budget whose maximum is
 *   what can accrue before the expiry when none is asked; one asked above that is refused
 *   (`isAdjustmentAllowed: false`) or lowered to it and listed in `adjustments`;
 * - the per-action maximum is the whole amount and the count the service's ceiling (the
 *   standard has neither);
 * - rules: `expiry` → `expiresAt` (default: the service's, reported in `granted`), `payee` →
 *   the recipient allowlist, `redeemer` → who may redeem (must include the delegate `to`; absent:
 *   only the delegate, reported in `granted`).
 */
export const toBuildInput = (request: MappedRequest, ctx: MappingContext): Mapped | Refusal => {
  const chainId = Number(BigInt(request.chainId))
  if (!ctx.chainIds.includes(chainId)) {
    return refuse("chainId", `chain ${request.chainId} (${chainId}) is not served here; supported: ${ctx.chainIds.map((c) => toHex(c)).join(", ")}`, ctx.supported)
  }
  const type = request.permission.type
  const support = ctx.supported[type]
  if (support === undefined || !support.chainIds.includes(toHex(chainId))) {
    return refuse("permission.type", `${type} cannot be enforced on chain ${request.chainId} by this deployment; supported: ${Object.keys(ctx.supported).join(", ") || "none"}`, ctx.supported)
  }
  for (const [i, rule] of (request.rules ?? []).entries()) {
    if (!support.ruleTypes.includes(rule.type)) {
      return refuse(`rules[${i}].type`, `the ${rule.type} rule cannot be enforced for ${type} by this deployment; supported rules: ${support.ruleTypes.join(", ")}`, ctx.supported)
    }
  }
  if (request.from !== undefined && ctx.account !== undefined && request.from.toLowerCase() !== ctx.account.toLowerCase()) {
    return refuse("from", `from ${request.from} is not the signer's account (${ctx.account})`)
  }
  const nowSeconds = Math.floor(ctx.now.getTime() / 1000)
  const rules = request.rules ?? []
  const ruleAt = (t: string) => rules.findIndex((r) => r.type === t)

  // Expiry: the service's grants always end (within a year).
  const e = ruleAt("expiry")
  const minSeconds = Math.ceil((ctx.minLifetimeMs ?? POLICY_DEFAULTS.minLifetimeMs) / 1000)
  const maxSeconds = Math.floor(POLICY_DEFAULTS.maxLifetimeMs / 1000)
  const expiry = e < 0 ? nowSeconds + Math.floor(POLICY_DEFAULTS.lifetimeMs / 1000) : (rules[e]!.data as { timestamp: number }).timestamp
  if (e >= 0 && expiry <= nowSeconds) return refuse(`rules[${e}].data.timestamp`, `the expiry ${iso(expiry)} is in the past`)
  if (e >= 0 && expiry < nowSeconds + minSeconds) return refuse(`rules[${e}].data.timestamp`, `the expiry must be at least ${minSeconds} seconds ahead`)
  if (e >= 0 && expiry > nowSeconds + maxSeconds) return refuse(`rules[${e}].data.timestamp`, "the expiry must be within a year: this service's grants always end")

  const redeemers = redeemersOf(request, rules)
  if (redeemers._tag === "Refused") return redeemers
  const { listed, named } = redeemers.value
  const data = request.permission.data as Record<string, unknown>
  // The requester's words: cleaned and bounded (src/domain/OutsideText.ts); the summary quotes them after the limits.
  const justification = typeof data["justification"] === "string" ? cleanOutsideText(data["justification"]) : ""
  const name = justification.length > 0 ? justification : `${type} for ${request.to}`
  const delegate = request.to.toLowerCase()
  const redeemerInput = named.length === 0 ? { mode: "delegate" as const } : { mode: "named" as const, addresses: named }

  if (isRevocationType(type)) {
    // No budget: ApprovalRevocationEnforcer lets each allowed primitive only set an approval back to none.
    const revocation = Object.fromEntries(REVOCATION_METHODS.map((m) => [m, type === "erc20-token-revocation" ? m === "erc20Approve" : data[m] === true])) as
      Record<(typeof REVOCATION_METHODS)[number], boolean>
    const input: BuildInput = {
      name,
      kind: "dapp",
      delegateeAddress: delegate,
      chainId,
      budgets: [],
      maxActions: MAX_ACTIONS,
      expiresAt: iso(expiry),
      redeemers: redeemerInput,
      revocation
    }
    const grantedRules: Array<Rule> = [{ type: "expiry", data: { timestamp: expiry } }, { type: "redeemer", data: { addresses: listed } }]
    return { _tag: "Ok", input, granted: { ...request, rules: grantedRules }, adjustments: [] }
  }

  if (type === BASKET_TYPE) {
    return basketBuild(request, ctx, { chainId, nowSeconds, expiry, name, delegate, redeemers: redeemerInput, listed, rules })
  }

  // The token.
  const erc20 = type.startsWith("erc20-")
  let token: Token | undefined
  if (erc20) {
    token = ctx.tokenOf(chainId, data["tokenAddress"] as string)
    if (token === undefined || isNative(token.address)) {
      const known = ctx.knownTokens(chainId).map((t) => `${t.symbol} (${t.address})`).join(", ")
      return refuse("permission.data.tokenAddress", `token ${data["tokenAddress"] as string} is not known on chain ${chainId}; known: ${known || "none"}`)
    }
  }
  const symbol = token?.symbol ?? NATIVE_SYMBOL
  const decimals = token?.decimals ?? 18
  const periodic = type.endsWith("-periodic")
  const start = (data["startTime"] as number | undefined) ??
    (periodic && ctx.startOnChain !== undefined ? Math.floor(ctx.startOnChain.getTime() / 1000) : nowSeconds)
  if (start >= expiry) return refuse("permission.data.startTime", `startTime ${iso(start)} is at or after the expiry ${iso(expiry)}: nothing could ever be spent`)

  // The budget.
  let budget: BuildInput["budgets"][number]
  const adjustments: Array<Adjustment> = []
  const granted: Record<string, unknown> = { ...data, startTime: start }
  if (periodic) {
    const amount = exact(hexOf(data["periodAmount"]), decimals, "permission.data.periodAmount")
    if (amount._tag === "Refused") return amount
    const duration = data["periodDuration"] as number
    budget = { token: { symbol }, amount: amount.value, period: periodOf(Math.min(duration, expiry - start), start) }
  } else if (type.endsWith("-allowance")) {
    const amount = exact(hexOf(data["allowanceAmount"]), decimals, "permission.data.allowanceAmount")
    if (amount._tag === "Refused") return amount
    // Usable from a future start only: one period from it to the expiry. From now (or a past start): the whole life.
    budget = start > nowSeconds
      ? { token: { symbol }, amount: amount.value, period: periodOf(expiry - start, start) }
      : { token: { symbol }, amount: amount.value }
  } else {
    const perSecond = hexOf(data["amountPerSecond"])
    const initial = data["initialAmount"] === undefined ? 0n : hexOf(data["initialAmount"])
    // Whatever could accrue before the expiry is all the chain would ever allow: an absent maximum is
    // that (a default, reported in `granted`). A larger one is a change of what was asked: refused
    // unless the request allows adjustment, then made and said (issue 43).
    const reachable = initial + perSecond * BigInt(expiry - start)
    const asked = data["maxAmount"] === undefined ? undefined : hexOf(data["maxAmount"])
    if (asked !== undefined && asked > reachable) {
      const why = `at most ${formatUnits(reachable, decimals)} ${symbol} can accrue before the expiry ${iso(expiry)} ` +
        `(initialAmount + amountPerSecond × ${expiry - start} s)`
      if (!request.permission.isAdjustmentAllowed) {
        return refuse("permission.data.maxAmount", `permission.data.maxAmount ${formatUnits(asked, decimals)} ${symbol} cannot be held exactly: ${why}, ` +
          "and isAdjustmentAllowed is false; ask for at most that, a later expiry or a higher rate, or allow adjustment")
      }
      adjustments.push({ field: "permission.data.maxAmount", requested: toHex(asked), granted: toHex(reachable), reason: why })
    }
    const max = asked === undefined || asked > reachable ? reachable : asked
    if (max <= initial) return refuse("permission.data.maxAmount", "permission.data.maxAmount must be above initialAmount")
    const amounts = [
      exact(perSecond, decimals, "permission.data.amountPerSecond"),
      exact(initial, decimals, "permission.data.initialAmount", true),
      exact(max, decimals, data["maxAmount"] === undefined ? "permission.data.amountPerSecond" : "permission.data.maxAmount")
    ] as const
    const failed = amounts.find((a) => a._tag === "Refused")
    if (failed !== undefined) return failed
    const [rate, first, most] = amounts.map((a) => (a as { value: number }).value) as [number, number, number]
    budget = { token: { symbol }, amount: most, stream: { perSecond: rate, initial: first, start: iso(start) } }
    granted["initialAmount"] = toHex(initial)
    granted["maxAmount"] = toHex(max)
  }

  // Payees and redeemers.
  const p = ruleAt("payee")
  const payees = p < 0 ? [] : (rules[p]!.data as { addresses: ReadonlyArray<Hex> }).addresses
  if (erc20 && payees.length > 1) {
    // Two or more recipients of a token are groups of a LogicalOrWrapper, chosen by args at each
    // redemption: a permission context, redeemed as it is, cannot carry that choice.
    return refuse(`rules[${p}].data.addresses`, "an erc20 payee rule holds one address here (each of several would be chosen per redemption, which a permission context cannot carry)")
  }
  if (payees.length > POLICY_DEFAULTS.maxRecipients) {
    return refuse(`rules[${p}].data.addresses`, `a payee rule lists at most ${POLICY_DEFAULTS.maxRecipients} addresses (each is enforced on chain)`)
  }
  const input: BuildInput = {
    name,
    kind: "dapp",
    delegateeAddress: delegate,
    chainId,
    budgets: [budget],
    perActionMax: { token: { symbol }, amount: budget.amount },
    maxActions: MAX_ACTIONS,
    ...(payees.length === 0 ? {} : { recipientAllowlist: payees.map((a, i) => ({ name: `payee ${i + 1}`, address: a.toLowerCase(), chainId })) }),
    expiresAt: iso(expiry),
    redeemers: redeemerInput
  }
  const grantedRules: Array<Rule> = [
    { type: "expiry", data: { timestamp: expiry } },
    { type: "redeemer", data: { addresses: listed } },
    ...(payees.length === 0 ? [] : [{ type: "payee", data: { addresses: payees.map((a) => a.toLowerCase()) } }])
  ]
  return {
    _tag: "Ok",
    input,
    granted: { ...request, permission: { ...request.permission, data: granted } as MappedPermission, rules: grantedRules },
    adjustments
  }
}

/**
 * `erc20-basket-periodic` (this service's type): a grant whose only budget caveat is the basket
 * (BasketPeriodEnforcer over the listed tokens, `periodAmount` USD in 18 decimals per period), so
 * its context is redeemed as it is for any of the tokens. Each token must be a USD stablecoin the
 * chain's registry knows; the amount must be exact in every token's decimals (each token's budget,
 * the service's bookkeeping, is the basket's amount). Payee: one address, as for erc20 types.
 */
const basketBuild = (
  request: MappedRequest,
  ctx: MappingContext,
  g: {
    readonly chainId: number
    readonly nowSeconds: number
    readonly expiry: number
    readonly name: string
    readonly delegate: string
    readonly redeemers: NonNullable<BuildInput["redeemers"]>
    readonly listed: ReadonlyArray<string>
    readonly rules: ReadonlyArray<Rule>
  }
): Mapped | Refusal => {
  const data = request.permission.data as Record<string, unknown>
  const usd = (t: Token) => !isNative(t.address) && USD_STABLECOINS.includes(t.symbol.toUpperCase())
  const tokens: Array<Token> = []
  for (const [i, a] of (data["tokens"] as ReadonlyArray<string>).entries()) {
    const token = ctx.tokenOf(g.chainId, a)
    if (token === undefined || !usd(token)) {
      const known = ctx.knownTokens(g.chainId).filter(usd).map((t) => `${t.symbol} (${t.address})`).join(", ")
      return refuse(`permission.data.tokens[${i}]`, `token ${a} is not a USD stablecoin known on chain ${g.chainId} (a basket counts each token 1:1 as USD); known: ${known || "none"}`)
    }
    tokens.push(token)
  }
  const units = hexOf(data["periodAmount"])
  if (units >= MAX_BASKET_UNITS) return refuse("permission.data.periodAmount", "permission.data.periodAmount must be below 2^192 (the enforcer's counter)")
  const amount = exact(units, 18, "permission.data.periodAmount")
  if (amount._tag === "Refused") return amount
  const coarse = tokens.find((t) => toUnits(amount.value, t.decimals) === undefined)
  if (coarse !== undefined) {
    return refuse("permission.data.periodAmount", `permission.data.periodAmount (${formatUnits(units, 18)} USD) cannot be held exactly in ${coarse.symbol} ` +
      `(${coarse.decimals} decimals): ask for an amount with at most ${coarse.decimals} decimals`)
  }
  const start = (data["startTime"] as number | undefined) ?? g.nowSeconds
  if (start >= g.expiry) return refuse("permission.data.startTime", `startTime ${iso(start)} is at or after the expiry ${iso(g.expiry)}: nothing could ever be spent`)
  const p = g.rules.findIndex((r) => r.type === "payee")
  const payees = p < 0 ? [] : (g.rules[p]!.data as { addresses: ReadonlyArray<Hex> }).addresses
  if (payees.length > 1) {
    return refuse(`rules[${p}].data.addresses`, "a basket's payee rule holds one address here (each of several would be chosen per redemption, which a permission context cannot carry)")
  }
  const duration = data["periodDuration"] as number
  const input: BuildInput = {
    name: g.name,
    kind: "dapp",
    delegateeAddress: g.delegate,
    chainId: g.chainId,
    budgets: [],
    basket: { amount: amount.value, unit: "USD", tokens: tokens.map((t) => ({ symbol: t.symbol })), period: periodOf(Math.min(duration, g.expiry - start), start) },
    perActionMax: { token: { symbol: tokens[0]!.symbol }, amount: amount.value },
    maxActions: MAX_ACTIONS,
    ...(payees.length === 0 ? {} : { recipientAllowlist: payees.map((a, i) => ({ name: `payee ${i + 1}`, address: a.toLowerCase(), chainId: g.chainId })) }),
    expiresAt: iso(g.expiry),
    redeemers: g.redeemers
  }
  const grantedRules: Array<Rule> = [
    { type: "expiry", data: { timestamp: g.expiry } },
    { type: "redeemer", data: { addresses: [...g.listed] } },
    ...(payees.length === 0 ? [] : [{ type: "payee", data: { addresses: payees.map((a) => a.toLowerCase()) } }])
  ]
  return {
    _tag: "Ok",
    input,
    granted: { ...request, permission: { ...request.permission, data: { ...data, startTime: start } } as MappedPermission, rules: grantedRules },
    adjustments: []
  }
}

/**
 * Who may redeem, from the `redeemer` rule: it must include the delegate `to` (a grant its delegate
 * cannot redeem is refused); absent: only the delegate.
 */
const redeemersOf = (
  request: MappedRequest,
  rules: ReadonlyArray<Rule>
): Decoded<{ readonly listed: ReadonlyArray<string>; readonly named: ReadonlyArray<string> }> => {
  const r = rules.findIndex((x) => x.type === "redeemer")
  const delegate = request.to.toLowerCase()
  const listed = r < 0 ? [delegate] : (rules[r]!.data as { addresses: ReadonlyArray<Hex> }).addresses.map((a) => a.toLowerCase())
  if (!listed.includes(delegate)) {
    return refuse(`rules[${r}].data.addresses`, `the delegate (to: ${request.to}) must be among the redeemers: a grant its delegate cannot redeem is refused`)
  }
  const named = listed.filter((a) => a !== delegate)
  if (named.length > MAX_REDEEMERS) return refuse(`rules[${r}].data.addresses`, `a redeemer rule lists at most ${MAX_REDEEMERS + 1} addresses`)
  return { _tag: "Ok", value: { listed, named } }
}

/** Decodes and maps one request: the build input, or the refusal naming the field. */
export const mapRequest = (raw: unknown, ctx: MappingContext): Mapped | Refusal => {
  const decoded = decodeRequest(raw, ctx.supported)
  return decoded._tag === "Refused" ? decoded : toBuildInput(decoded.value, ctx)
}
