/**
 * An ERC-7715 request as the standard's wire carries it (what the kit's `erc7715ProviderActions`
 * sends), checked field by field: the chain id and addresses, the permission's type and data
 * (amounts as hex quantities in base units, times in whole seconds), the rules. Pure; a refusal
 * names the field. The mapping to a grant: Erc7715.ts.
 */
import type {
  Erc20TokenAllowancePermission,
  Erc20TokenPeriodicPermission,
  Erc20TokenRevocationPermission,
  Erc20TokenStreamPermission,
  NativeTokenAllowancePermission,
  NativeTokenPeriodicPermission,
  NativeTokenStreamPermission,
  Rule,
  TokenApprovalRevocationPermission
} from "@metamask/7715-permission-types"
import { type Hex, toHex } from "viem"
import type { SupportedPermissions } from "./Supported.ts"

/**
 * The permission types a grant can hold: a budget type maps to one budget enforcer, a revocation
 * type to ApprovalRevocationEnforcer (docs/permissions.md).
 */
export type MappedPermission =
  | NativeTokenStreamPermission
  | NativeTokenPeriodicPermission
  | NativeTokenAllowancePermission
  | Erc20TokenStreamPermission
  | Erc20TokenPeriodicPermission
  | Erc20TokenAllowancePermission
  | Erc20TokenRevocationPermission
  | TokenApprovalRevocationPermission
  | Erc20BasketPeriodicPermission
export type MappedType = MappedPermission["type"]
/** `PermissionRequest` of the types package, over this service's types too (the package's generic takes only its own). */
export interface MappedRequest {
  chainId: Hex
  from?: Hex
  to: Hex
  permission: MappedPermission
  rules?: Array<Rule> | null
}

/**
 * This service's own type (docs/permissions.md, "erc20-basket-periodic"): one allowance per period
 * across several USD stablecoins, each counted 1:1 as USD by its decimals, held by
 * BasketPeriodEnforcer alone. `periodAmount` is a hex quantity of USD in 18 decimals (the
 * enforcer's common unit: 100 USD = 100 × 10^18), as the standard's amounts are hex base units.
 */
export interface Erc20BasketPeriodicPermission {
  type: "erc20-basket-periodic"
  isAdjustmentAllowed: boolean
  data: {
    tokens: Array<Hex>
    periodAmount: Hex
    periodDuration: number
    startTime?: number | null
    justification?: string | null
  }
}
export const BASKET_TYPE = "erc20-basket-periodic" as const

/** The standard's revocation types: no budget, only approvals the account gave set back to none. */
export const REVOCATION_TYPES: ReadonlyArray<MappedType> = ["erc20-token-revocation", "token-approval-revocation"]
export const isRevocationType = (type: string): type is "erc20-token-revocation" | "token-approval-revocation" =>
  (REVOCATION_TYPES as ReadonlyArray<string>).includes(type)

/** `token-approval-revocation`'s primitives, in the types package's order (ApprovalRevocationEnforcer's bits 0-5). */
export const REVOCATION_METHODS = [
  "erc20Approve",
  "erc721Approve",
  "erc721SetApprovalForAll",
  "permit2Approve",
  "permit2Lockdown",
  "permit2InvalidateNonces"
] as const

export const MAPPED_TYPES: ReadonlyArray<MappedType> = [
  "native-token-stream",
  "native-token-periodic",
  "native-token-allowance",
  "erc20-token-stream",
  "erc20-token-periodic",
  "erc20-token-allowance",
  ...REVOCATION_TYPES,
  BASKET_TYPE
]
export const RULE_TYPES = ["expiry", "payee", "redeemer"] as const

/** The standard's longest period (`MAX_PERIOD_DURATION` of the types package: 10 years). */
export const MAX_PERIOD_SECONDS = 10 * 365 * 24 * 60 * 60

export interface Refusal {
  readonly _tag: "Refused"
  /** The request's field, as a path (`permission.data.periodAmount`, `rules[0].data.timestamp`, ...). */
  readonly field: string
  readonly message: string
  /** What this deployment supports, for the 400's details. */
  readonly supported?: SupportedPermissions
}
export type Decoded<A> = { readonly _tag: "Ok"; readonly value: A } | Refusal

export const refuse = (field: string, message: string, supported?: SupportedPermissions): Refusal =>
  supported === undefined ? { _tag: "Refused", field, message } : { _tag: "Refused", field, message, supported }

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x)
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const QUANTITY = /^0x[0-9a-fA-F]{1,64}$/
const MAX_SECONDS = 253_402_300_799 // 9999-12-31T23:59:59Z

/** Text PostgreSQL can store and a client can read back: no NUL, no unpaired UTF-16 surrogate. */
export const storable = /^(?:[^\u0000\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/

/**
 * The path of the first string (value or key) in `value` holding a NUL or an unpaired surrogate,
 * iteratively (a body nested thousands deep must not exhaust the stack).
 */
export const badTextAt = (value: unknown, path: string): string | undefined => {
  const stack: Array<readonly [unknown, string]> = [[value, path]]
  while (stack.length > 0) {
    const [v, p] = stack.pop()!
    if (typeof v === "string") {
      if (!storable.test(v)) return p
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${p}[${i}]`])
    } else if (typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v).reverse()) {
        const at = p === "" ? k : `${p}.${k}`
        if (!storable.test(k)) return at
        stack.push([x, at])
      }
    }
  }
  return undefined
}

const address = (x: unknown, field: string): Decoded<Hex> =>
  typeof x === "string" && ADDRESS.test(x)
    ? { _tag: "Ok", value: x.toLowerCase() as Hex }
    : refuse(field, `${field} must be an address: 0x and 40 hex digits (20 bytes)`)

/** A hex quantity (base units) of at most 256 bits; `positive`: above 0. */
const quantity = (x: unknown, field: string, positive: boolean): Decoded<bigint> => {
  if (typeof x !== "string" || !QUANTITY.test(x)) return refuse(field, `${field} must be a hex quantity in base units (0x…, at most 256 bits)`)
  const value = BigInt(x)
  if (positive && value === 0n) return refuse(field, `${field} must be above 0`)
  return { _tag: "Ok", value }
}

const seconds = (x: unknown, field: string, min: number, max: number): Decoded<number> =>
  typeof x === "number" && Number.isInteger(x) && x >= min && x <= max
    ? { _tag: "Ok", value: x }
    : refuse(field, `${field} must be a whole number of seconds from ${min} to ${max}`)

const optional = <A>(x: unknown, decode: (x: unknown) => Decoded<A>): Decoded<A | undefined> =>
  x === undefined || x === null ? { _tag: "Ok", value: undefined } : decode(x)

/**
 * One request of `wallet_requestExecutionPermissions`' params, checked field by field: the chain id
 * and addresses, the permission's type and its data (amounts as hex quantities, times in whole
 * seconds), the rules. Types this service cannot map are refused here, listing the supported ones.
 */
export const decodeRequest = (raw: unknown, supported: SupportedPermissions): Decoded<MappedRequest> => {
  if (!isRecord(raw)) return refuse("request", "a permission request must be an object")
  const bad = badTextAt(raw, "")
  if (bad !== undefined) return refuse(bad, `${bad} must not contain NUL characters or unpaired surrogates`)
  if (typeof raw["chainId"] !== "string" || !/^0x[0-9a-fA-F]{1,16}$/.test(raw["chainId"])) {
    return refuse("chainId", "chainId must be a hex chain id (0x…)")
  }
  const to = address(raw["to"], "to")
  if (to._tag === "Refused") return to
  const from = optional(raw["from"], (x) => address(x, "from"))
  if (from._tag === "Refused") return from
  const permission = raw["permission"]
  if (!isRecord(permission)) return refuse("permission", "permission must be an object { type, isAdjustmentAllowed, data }")
  const type = permission["type"]
  if (typeof type !== "string") return refuse("permission.type", "permission.type must be a string")
  if (!(MAPPED_TYPES as ReadonlyArray<string>).includes(type)) {
    return refuse("permission.type", `permission type ${JSON.stringify(type)} cannot be held by this service's grants; supported: ${Object.keys(supported).join(", ")}`, supported)
  }
  if (typeof permission["isAdjustmentAllowed"] !== "boolean") return refuse("permission.isAdjustmentAllowed", "permission.isAdjustmentAllowed must be a boolean")
  const data = permission["data"]
  if (!isRecord(data)) return refuse("permission.data", "permission.data must be an object")
  const decodedData = decodeData(type as MappedType, data)
  if (decodedData._tag === "Refused") return decodedData
  const rulesRaw = raw["rules"]
  if (rulesRaw !== undefined && rulesRaw !== null && !Array.isArray(rulesRaw)) return refuse("rules", "rules must be an array (or null)")
  const rules: Array<Rule> = []
  for (const [i, rule] of (Array.isArray(rulesRaw) ? rulesRaw : []).entries()) {
    const field = `rules[${i}]`
    if (!isRecord(rule) || typeof rule["type"] !== "string" || !isRecord(rule["data"])) {
      return refuse(field, `${field} must be an object { type, data }`)
    }
    const ruleType = rule["type"]
    if (!(RULE_TYPES as ReadonlyArray<string>).includes(ruleType)) {
      return refuse(`${field}.type`, `rule type ${JSON.stringify(ruleType)} cannot be held on chain here; supported rules: ${RULE_TYPES.join(", ")}`, supported)
    }
    if (rules.some((r) => r.type === ruleType)) return refuse(`${field}.type`, `the ${ruleType} rule appears twice`)
    const ruleData = rule["data"]
    if (ruleType === "expiry") {
      const t = seconds(ruleData["timestamp"], `${field}.data.timestamp`, 1, MAX_SECONDS)
      if (t._tag === "Refused") return t
      rules.push({ type: "expiry", data: { timestamp: t.value } })
    } else {
      const list = ruleData["addresses"]
      if (!Array.isArray(list) || list.length === 0) return refuse(`${field}.data.addresses`, `${field}.data.addresses must list at least one address`)
      const addresses: Array<Hex> = []
      for (const [j, a] of list.entries()) {
        const decoded = address(a, `${field}.data.addresses[${j}]`)
        if (decoded._tag === "Refused") return decoded
        if (addresses.includes(decoded.value)) return refuse(`${field}.data.addresses[${j}]`, `${decoded.value} is listed twice`)
        addresses.push(decoded.value)
      }
      rules.push({ type: ruleType, data: { addresses } })
    }
  }
  return {
    _tag: "Ok",
    value: {
      chainId: raw["chainId"].toLowerCase() as Hex,
      ...(from.value === undefined ? {} : { from: from.value }),
      to: to.value,
      permission: { type, isAdjustmentAllowed: permission["isAdjustmentAllowed"], data: decodedData.value } as MappedPermission,
      rules
    }
  }
}

type Data = Record<string, unknown>

const decodeData = (type: MappedType, data: Record<string, unknown>): Decoded<Data> => {
  const f = (name: string) => `permission.data.${name}`
  const out: Data = {}
  if (data["justification"] !== undefined && data["justification"] !== null) {
    if (typeof data["justification"] !== "string" || data["justification"].length > 1000) {
      return refuse(f("justification"), "permission.data.justification must be a string of at most 1000 characters")
    }
    out["justification"] = data["justification"]
  }
  if (isRevocationType(type)) return revocationData(type, data, out)
  if (type === BASKET_TYPE) {
    // A field the type does not have is refused: a dApp sending `tokenAddress` may believe it narrows the grant.
    const extra = Object.keys(data).find((k) => !BASKET_FIELDS.includes(k))
    if (extra !== undefined) return refuse(f(extra), `${f(extra)} is not a field of ${type} (it takes ${BASKET_FIELDS.join(", ")})`)
    const tokens = basketTokens(data["tokens"])
    if (tokens._tag === "Refused") return tokens
    out["tokens"] = tokens.value
  } else if (type.startsWith("erc20-")) {
    const token = address(data["tokenAddress"], f("tokenAddress"))
    if (token._tag === "Refused") return token
    out["tokenAddress"] = token.value
  }
  const start = optional(data["startTime"], (x) => seconds(x, f("startTime"), 1, MAX_SECONDS))
  if (start._tag === "Refused") return start
  if (start.value !== undefined) out["startTime"] = start.value
  const put = (name: string, positive: boolean, required: boolean): Refusal | undefined => {
    if (!required && (data[name] === undefined || data[name] === null)) return undefined
    const q = quantity(data[name], f(name), positive)
    if (q._tag === "Refused") return q
    out[name] = q.value
    return undefined
  }
  const checks = type.endsWith("-stream")
    ? [put("amountPerSecond", true, true), put("initialAmount", false, false), put("maxAmount", true, false)]
    : type.endsWith("-periodic")
    ? [put("periodAmount", true, true)]
    : [put("allowanceAmount", true, true)]
  const failed = checks.find((c) => c !== undefined)
  if (failed !== undefined) return failed
  if (type.endsWith("-periodic")) {
    const d = seconds(data["periodDuration"], f("periodDuration"), 1, MAX_PERIOD_SECONDS)
    if (d._tag === "Refused") return d
    out["periodDuration"] = d.value
  }
  if (type.endsWith("-stream") && out["maxAmount"] !== undefined && (out["maxAmount"] as bigint) <= ((out["initialAmount"] as bigint | undefined) ?? 0n)) {
    return refuse(f("maxAmount"), "permission.data.maxAmount must be above initialAmount")
  }
  // Amounts leave this function as the wire's hex; the mapping reads them again as bigints.
  for (const k of ["amountPerSecond", "initialAmount", "maxAmount", "periodAmount", "allowanceAmount"]) {
    if (typeof out[k] === "bigint") out[k] = toHex(out[k] as bigint)
  }
  return { _tag: "Ok", value: out }
}

const BASKET_FIELDS: ReadonlyArray<string> = ["tokens", "periodAmount", "periodDuration", "startTime", "justification"]

/** Most tokens of a basket (BasketPeriodEnforcer loops over them; Baskets.ts MAX_BASKET_TOKENS). */
const MAX_BASKET_TOKENS = 16

/** A basket's token list: 1 to 16 addresses, none twice (whether the chain knows them is the mapping's). */
const basketTokens = (x: unknown): Decoded<Array<Hex>> => {
  const field = "permission.data.tokens"
  if (!Array.isArray(x) || x.length === 0) return refuse(field, `${field} must list at least one token address`)
  if (x.length > MAX_BASKET_TOKENS) return refuse(field, `${field} lists at most ${MAX_BASKET_TOKENS} tokens`)
  const out: Array<Hex> = []
  for (const [i, a] of x.entries()) {
    const decoded = address(a, `${field}[${i}]`)
    if (decoded._tag === "Refused") return decoded
    if (out.includes(decoded.value)) return refuse(`${field}[${i}]`, `${decoded.value} is listed twice: a basket counts each token once`)
    out.push(decoded.value)
  }
  return { _tag: "Ok", value: out }
}

/**
 * A revocation type's data: `erc20-token-revocation` has none but its justification;
 * `token-approval-revocation` has the six primitives, each a boolean, at least one true. Any other
 * field is refused: a dApp sending `tokenAddress` (or the like) may believe it narrows the grant,
 * which the standard's type does not (it would revoke approvals of any token).
 */
const revocationData = (type: "erc20-token-revocation" | "token-approval-revocation", data: Record<string, unknown>, out: Data): Decoded<Data> => {
  const known: ReadonlyArray<string> = type === "erc20-token-revocation" ? ["justification"] : ["justification", ...REVOCATION_METHODS]
  const extra = Object.keys(data).find((k) => !known.includes(k))
  if (extra !== undefined) {
    return refuse(`permission.data.${extra}`, `permission.data.${extra} is not a field of ${type} (it takes ${known.join(", ")}): a grant never holds less than it seems to`)
  }
  if (type === "erc20-token-revocation") return { _tag: "Ok", value: out }
  for (const m of REVOCATION_METHODS) {
    if (typeof data[m] !== "boolean") return refuse(`permission.data.${m}`, `permission.data.${m} must be a boolean`)
    out[m] = data[m]
  }
  if (!REVOCATION_METHODS.some((m) => out[m] === true)) {
    return refuse("permission.data", `${type} allows at least one of ${REVOCATION_METHODS.join(", ")}`)
  }
  return { _tag: "Ok", value: out }
}
