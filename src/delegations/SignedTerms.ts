/**
 * A grant's limits read back from the delegation the owner signs: each caveat's terms decoded by
 * its enforcer's byte layout (the layouts of Grant.ts's table; the enforcers' own `getTermsInfo`
 * read the same bytes). The summary is written from this and nothing else, so what the owner reads
 * is what the chain holds, whatever the request said (Summary.ts). A caveat this file cannot read
 * is a refusal: a grant whose limits cannot be stated is not built.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { type Address, decodeAbiParameters, getAddress, type Hex, hexToBigInt, size, slice } from "viem"
import { decodeApprovalTerms, type ApprovalRule } from "../chain/Approvals.ts"
import { type BasketTerms, decodeBasketTerms } from "../chain/Basket.ts"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { NATIVE_ADDRESS } from "../tokens/Native.ts"
import type { RevocationMethods } from "./Domain.ts"

export interface SignedBudget {
  /** The token (the ERC-7528 address for the native coin). */
  readonly token: Address
  /** The allowance of one period (the whole budget when one period spans the grant), or a stream's maximum. */
  readonly units: bigint
  readonly period?: { readonly seconds: number; readonly startSeconds: number }
  readonly stream?: { readonly initialUnits: bigint; readonly perSecondUnits: bigint; readonly startSeconds: number }
}

export interface SignedTerms {
  readonly delegate: Address
  readonly delegator: Address
  /** TimestampEnforcer: redeemable strictly after `notBeforeSeconds` (0: from now) and before `expiresAtSeconds`. */
  readonly notBeforeSeconds: number
  readonly expiresAtSeconds: number
  /** RedeemerEnforcer's list; absent: no redeemer caveat. */
  readonly redeemers?: ReadonlyArray<Address>
  readonly budgets: ReadonlyArray<SignedBudget>
  /** Per-action maximum per token (TransferCapEnforcer; ValueLteEnforcer for the native coin). */
  readonly perAction: ReadonlyArray<{ readonly token: Address; readonly units: bigint }>
  /** ValueLteEnforcer of an ERC-20 grant: the most ETH an action may carry. */
  readonly maxValue?: bigint
  /** AllowedTargetsEnforcer and AllowedMethodsEnforcer of an ERC-20 grant. */
  readonly targets: ReadonlyArray<Address>
  readonly selectors: ReadonlyArray<Hex>
  /** ExactCalldataEnforcer: the only call data an action may have ("0x": it only sends value). */
  readonly exactCalldata?: Hex
  /** The recipient allowlist (pinned transfer recipients, or a native grant's targets); empty: any. */
  readonly recipients: ReadonlyArray<Address>
  /** LimitedCallsEnforcer. */
  readonly maxActions?: number
  readonly approval?: ApprovalRule
  readonly revocation?: RevocationMethods
  /** BasketPeriodEnforcer: one allowance (18-decimals common unit) per period across its tokens. */
  readonly basket?: BasketTerms
}

const lower = (a: string) => a.toLowerCase() as Address
/** The 32-byte word at byte `at` of a caveat's terms. */
export const word = (terms: Hex, at: number) => hexToBigInt(slice(terms, at, at + 32))
const addressAt = (terms: Hex, at: number) => lower(slice(terms, at, at + 20))
const small = (n: bigint, what: string) => {
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${what} is out of range`)
  return Number(n)
}
const packed = (terms: Hex, width: number, what: string): ReadonlyArray<Hex> => {
  const n = size(terms)
  if (n === 0 || n % width !== 0) throw new Error(`${what} terms are not a list of ${width}-byte entries`)
  return Array.from({ length: n / width }, (_, i) => slice(terms, i * width, (i + 1) * width))
}
const exactly = (terms: Hex, bytes: number, what: string) => {
  if (size(terms) !== bytes) throw new Error(`${what} terms are not ${bytes} bytes`)
}

/**
 * LogicalOrWrapperEnforcer terms: groups of caveats, one of which a redemption must satisfy whole
 * (Grant.ts encodes them, this file and the mandate's code in src/hiring read them).
 */
export const caveatGroupsAbi = [{
  type: "tuple[]",
  components: [{
    name: "caveats",
    type: "tuple[]",
    components: [{ name: "enforcer", type: "address" }, { name: "terms", type: "bytes" }, { name: "args", type: "bytes" }]
  }]
}] as const

export interface TermsCaveat {
  readonly enforcer: Address
  readonly terms: Hex
}
/** A LogicalOrWrapperEnforcer's groups, each its caveats (enforcer lower-cased; the args are the redeemer's, not signed). */
export const decodeCaveatGroups = (terms: Hex): ReadonlyArray<ReadonlyArray<TermsCaveat>> =>
  decodeAbiParameters(caveatGroupsAbi, terms)[0].map((g) => g.caveats.map((c) => ({ enforcer: lower(c.enforcer), terms: c.terms })))

/** AllowedCalldataEnforcer terms pinning one word of the call data to an address: the word's offset and the address. */
export const pinnedAddress = (terms: Hex): { readonly offset: bigint; readonly address: Address } => {
  exactly(terms, 64, "AllowedCalldataEnforcer")
  const value = slice(terms, 32, 64)
  if (hexToBigInt(slice(value, 0, 12)) !== 0n) throw new Error("AllowedCalldataEnforcer pins a word that is not an address")
  return { offset: word(terms, 0), address: lower(slice(value, 12, 32)) }
}

/** The bits of ApprovalRevocationEnforcer's one-byte mask, in its order. */
const REVOCATION_BITS: ReadonlyArray<keyof RevocationMethods> = [
  "erc20Approve", "erc721Approve", "erc721SetApprovalForAll", "permit2Approve", "permit2Lockdown", "permit2InvalidateNonces"
]

/** AllowedCalldataEnforcer terms pinning `transfer`'s recipient word: the recipient. */
const pinnedRecipient = (terms: Hex): Address => {
  exactly(terms, 64, "AllowedCalldataEnforcer")
  if (word(terms, 0) !== 4n) throw new Error("AllowedCalldataEnforcer pins something other than a transfer's recipient")
  return pinnedAddress(terms).address
}

/**
 * Every limit of `delegation`'s caveats, or why one cannot be read (an enforcer this deployment
 * does not name, terms of an unexpected length or meaning).
 */
export const decodeSignedTerms = (delegation: Delegation, environment: DelegationEnvironment): SignedTerms | { readonly problem: string } => {
  const names = new Map(Object.entries(environment.caveatEnforcers).map(([name, address]) => [lower(address), name]))
  let notBeforeSeconds = 0
  let expiresAtSeconds: number | undefined
  let redeemers: ReadonlyArray<Address> | undefined
  const budgets: Array<SignedBudget> = []
  const perAction: Array<{ token: Address; units: bigint }> = []
  let valueLte: bigint | undefined
  let targets: ReadonlyArray<Address> = []
  let selectors: ReadonlyArray<Hex> = []
  let exactCalldata: Hex | undefined
  let recipients: ReadonlyArray<Address> = []
  let maxActions: number | undefined
  let approval: ApprovalRule | undefined
  let revocation: RevocationMethods | undefined
  let basket: BasketTerms | undefined
  let nativeBudget: Omit<SignedBudget, "token"> | undefined
  try {
    for (const caveat of delegation.caveats) {
      const terms = caveat.terms as Hex
      const name = names.get(lower(caveat.enforcer))
      switch (name) {
        case "TimestampEnforcer":
          exactly(terms, 32, name)
          notBeforeSeconds = small(hexToBigInt(slice(terms, 0, 16)), "the start")
          expiresAtSeconds = small(hexToBigInt(slice(terms, 16, 32)), "the expiry")
          break
        case "RedeemerEnforcer":
          redeemers = packed(terms, 20, name).map(lower)
          break
        case "ValueLteEnforcer":
          exactly(terms, 32, name)
          valueLte = word(terms, 0)
          break
        case "AllowedTargetsEnforcer":
          targets = packed(terms, 20, name).map(lower)
          break
        case "AllowedMethodsEnforcer":
          selectors = packed(terms, 4, name).map((s) => s.toLowerCase() as Hex)
          break
        case "AllowedCalldataEnforcer":
          recipients = [pinnedRecipient(terms)]
          break
        case "LogicalOrWrapperEnforcer": {
          recipients = decodeCaveatGroups(terms).map((g) => {
            const only = g.length === 1 ? g[0]! : undefined
            if (only === undefined || names.get(lower(only.enforcer)) !== "AllowedCalldataEnforcer") {
              throw new Error("a LogicalOrWrapperEnforcer group is not one pinned recipient")
            }
            return pinnedRecipient(only.terms)
          })
          break
        }
        case "TransferCapEnforcer":
          for (const entry of packed(terms, 52, name)) perAction.push({ token: addressAt(entry, 0), units: word(entry, 20) })
          break
        case "LimitedCallsEnforcer":
          exactly(terms, 32, name)
          maxActions = small(word(terms, 0), "the action count")
          break
        case "MultiTokenPeriodEnforcer":
          for (const entry of packed(terms, 116, name)) {
            budgets.push({
              token: addressAt(entry, 0),
              units: word(entry, 20),
              period: { seconds: small(word(entry, 52), "a period"), startSeconds: small(word(entry, 84), "a period start") }
            })
          }
          break
        case "ERC20StreamingEnforcer":
          exactly(terms, 148, name)
          budgets.push({
            token: addressAt(terms, 0),
            units: word(terms, 52),
            stream: { initialUnits: word(terms, 20), perSecondUnits: word(terms, 84), startSeconds: small(word(terms, 116), "a stream start") }
          })
          break
        case "ExactCalldataEnforcer":
          exactCalldata = terms.toLowerCase() as Hex
          break
        case "NativeTokenPeriodTransferEnforcer":
          exactly(terms, 96, name)
          nativeBudget = {
            units: word(terms, 0),
            period: { seconds: small(word(terms, 32), "a period"), startSeconds: small(word(terms, 64), "a period start") }
          }
          break
        case "NativeTokenStreamingEnforcer":
          exactly(terms, 128, name)
          nativeBudget = {
            units: word(terms, 32),
            stream: { initialUnits: word(terms, 0), perSecondUnits: word(terms, 64), startSeconds: small(word(terms, 96), "a stream start") }
          }
          break
        case "ApprovalEnforcer":
          approval = decodeApprovalTerms(terms)
          if (approval === undefined) throw new Error("ApprovalEnforcer terms are not a rule")
          break
        case "BasketPeriodEnforcer":
          basket = decodeBasketTerms(terms)
          if (basket === undefined) throw new Error("BasketPeriodEnforcer terms are not a basket the enforcer accepts")
          break
        case "ApprovalRevocationEnforcer": {
          exactly(terms, 1, name)
          const mask = Number(hexToBigInt(terms))
          if (mask === 0 || mask >= 1 << REVOCATION_BITS.length) throw new Error("ApprovalRevocationEnforcer terms set no known primitive")
          revocation = Object.fromEntries(REVOCATION_BITS.map((k, i) => [k, (mask & (1 << i)) !== 0])) as unknown as RevocationMethods
          break
        }
        default:
          throw new Error(`the caveat of ${getAddress(caveat.enforcer)} is not one whose terms this service can state`)
      }
    }
  } catch (cause) {
    return { problem: cause instanceof Error ? cause.message : String(cause) }
  }
  if (expiresAtSeconds === undefined) return { problem: "the delegation has no expiry (TimestampEnforcer)" }
  // A native grant: its budget is the native enforcer's, its recipients the allowed targets, its per-action cap the value.
  const native = nativeBudget !== undefined
  if (native && (budgets.length > 0 || perAction.length > 0)) return { problem: "a native budget beside an ERC-20 one" }
  return {
    delegate: lower(delegation.delegate),
    delegator: lower(delegation.delegator),
    notBeforeSeconds,
    expiresAtSeconds,
    ...(redeemers === undefined ? {} : { redeemers }),
    budgets: native ? [{ token: NATIVE_ADDRESS as Address, ...nativeBudget! }] : budgets,
    perAction: native ? (valueLte === undefined ? [] : [{ token: NATIVE_ADDRESS as Address, units: valueLte }]) : perAction,
    ...(native || valueLte === undefined ? {} : { maxValue: valueLte }),
    targets: native ? [] : targets,
    selectors,
    ...(exactCalldata === undefined ? {} : { exactCalldata }),
    recipients: native ? targets : recipients,
    ...(maxActions === undefined ? {} : { maxActions }),
    ...(approval === undefined ? {} : { approval }),
    ...(revocation === undefined ? {} : { revocation }),
    ...(basket === undefined ? {} : { basket })
  }
}
