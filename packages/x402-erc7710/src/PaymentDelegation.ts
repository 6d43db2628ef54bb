/**
 * The payment delegation: what an agent signs to pay one x402 request from its owner's
 * account under its grant (ERC-7710 method). It is a Delegation Framework delegation from
 * the grant's delegate (the agent: an EOA or its smart account) to the facilitator, whose
 * authority is the grant, so the DelegationManager runs the payment's caveats (leaf) and
 * then every caveat of the grant (budget, per-action cap, count, expiry, recipients,
 * redeemer rule) on the one transfer it executes from the owner's account.
 *
 * Its caveats (docs/payments.md, "What a payment delegation holds on chain"):
 *
 *   exact   ExactExecutionEnforcer      the execution is exactly `asset.transfer(payTo, amount)`,
 *                                       value 0, single call, default mode
 *   upto    ERC20TransferAmountEnforcer `asset.transfer(_, x)` only, x summed over the delegation ≤ ceiling
 *           AllowedCalldataEnforcer     the transfer's recipient word is `payTo`
 *           ValueLteEnforcer            no native value
 *   both    LimitedCallsEnforcer        redeemable once
 *           TimestampEnforcer           only strictly before `validBefore` (unix seconds)
 *
 * The delegate binds who may settle: the DelegationManager accepts the chain only from its
 * leaf's delegate, so no one but the facilitator's key can redeem it.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { type Caveat, type Delegation, ExecutionMode, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import {
  createCaveatBuilder,
  decodeDelegations,
  encodeDelegations,
  encodeSingleExecution,
  hashDelegation
} from "@metamask/smart-accounts-kit/utils"
import {
  type Address,
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  hexToBigInt,
  pad,
  size,
  slice
} from "viem"
import type { DelegationEnvironment, PaymentScheme } from "./Wire.ts"

export interface PaymentTerms {
  readonly scheme: PaymentScheme
  readonly asset: Address
  readonly payTo: Address
  /** `exact`: the amount transferred; `upto`: the most that may be transferred. */
  readonly amount: bigint
  /** Unix seconds: redeemable strictly before it. */
  readonly validBefore: number
}

export interface Execution {
  readonly target: Address
  readonly value: bigint
  readonly callData: Hex
}

/** `asset.transfer(payTo, amount)` with no native value: the one execution a payment redeems. */
export const transferExecution = (asset: Address, payTo: Address, amount: bigint): Execution => ({
  target: asset,
  value: 0n,
  callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [payTo, amount] })
})

/** The caveats of a payment delegation for `terms` (see the header for what each holds). */
export const paymentCaveats = (environment: DelegationEnvironment, terms: PaymentTerms): ReadonlyArray<Caveat> => {
  const builder = createCaveatBuilder(environment as never)
  const scoped = terms.scheme === "exact"
    ? builder.addCaveat("exactExecution", { execution: transferExecution(terms.asset, terms.payTo, terms.amount) })
    : builder
      .addCaveat("erc20TransferAmount", { tokenAddress: terms.asset, maxAmount: terms.amount })
      .addCaveat("allowedCalldata", { startIndex: 4, value: pad(terms.payTo.toLowerCase() as Hex, { size: 32 }) })
      .addCaveat("valueLte", { maxValue: 0n })
  return scoped
    .addCaveat("limitedCalls", { limit: 1 })
    .addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: terms.validBefore })
    .build()
    .map((c) => ({ ...c, args: "0x" as Hex }))
}

/** The payment delegation under `parent` (the signed grant), unsigned. */
export const makePaymentDelegation = (
  environment: DelegationEnvironment,
  input: { readonly parent: Delegation; readonly facilitator: Address; readonly terms: PaymentTerms; readonly salt: Hex }
): Delegation => ({
  delegate: input.facilitator,
  delegator: input.parent.delegate,
  authority: hashDelegation(input.parent),
  caveats: [...paymentCaveats(environment, input.terms)],
  salt: input.salt,
  signature: "0x"
})

/** The permission context the facilitator redeems: the chain leaf first (the signed payment, then the grant with its args). */
export const permissionContextOf = (chain: ReadonlyArray<Delegation>): Hex => encodeDelegations([...chain])

/** The chain in a permission context, leaf first; `undefined` if it does not decode. */
export const decodeChain = (permissionContext: Hex): ReadonlyArray<Delegation> | undefined => {
  try {
    return decodeDelegations(permissionContext)
  } catch {
    return undefined
  }
}

/** `DelegationManager.redeemDelegations([context], [single default], [execution])`. */
export const redeemCallData = (permissionContext: Hex, execution: Execution): Hex =>
  encodeFunctionData({
    abi: DelegationManager,
    functionName: "redeemDelegations",
    args: [[permissionContext], [ExecutionMode.SingleDefault as Hex], [encodeSingleExecution({ ...execution })]]
  })

export type ChainCheck =
  | { readonly ok: true; readonly leaf: Delegation; readonly root: Delegation }
  | { readonly ok: false; readonly reason: string }

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * The shape of a chain, as the DelegationManager will walk it: each delegation's authority is
 * its parent's hash and its delegator its parent's delegate, the root is a root delegation.
 * (The manager checks this and every signature again at redemption; reading it here gives
 * a reason instead of a revert.)
 */
export const checkChain = (chain: ReadonlyArray<Delegation>): ChainCheck => {
  if (chain.length === 0) return { ok: false, reason: "the permission context holds no delegation" }
  if (chain.length > 8) return { ok: false, reason: "the delegation chain is longer than 8" }
  for (let i = 0; i + 1 < chain.length; i++) {
    const child = chain[i]!
    const parent = chain[i + 1]!
    if (!same(child.authority, hashDelegation(parent))) return { ok: false, reason: `delegation ${i}'s authority is not its parent's hash` }
    if (!same(child.delegator, parent.delegate)) return { ok: false, reason: `delegation ${i}'s delegator is not its parent's delegate` }
  }
  const root = chain[chain.length - 1]!
  if (!same(root.authority, ROOT_AUTHORITY)) return { ok: false, reason: "the chain does not end in a root delegation" }
  return { ok: true, leaf: chain[0]!, root }
}

export type TermsRead =
  | { readonly ok: true; readonly terms: PaymentTerms }
  | { readonly ok: false; readonly reason: string }

/** The one caveat of `leaf` held by `enforcer`, its terms; `null` if there are several. */
const termsOf = (leaf: Delegation, enforcer: Address | undefined): Hex | undefined | null => {
  if (enforcer === undefined) return undefined
  const found = leaf.caveats.filter((c) => same(c.enforcer, enforcer))
  if (found.length > 1) return null
  return found[0]?.terms
}

const word = (terms: Hex, index: number): bigint => hexToBigInt(slice(terms, index * 32, index * 32 + 32))

/** `(to, amount)` of `transfer(address,uint256)` call data, exactly 68 bytes; `undefined` otherwise. */
const transferArgs = (callData: Hex): { to: Address; amount: bigint } | undefined => {
  if (size(callData) !== 68) return undefined
  try {
    const decoded = decodeFunctionData({ abi: erc20Abi, data: callData })
    if (decoded.functionName !== "transfer") return undefined
    const [to, amount] = decoded.args as readonly [Address, bigint]
    return { to: getAddress(to), amount }
  } catch {
    return undefined
  }
}

/**
 * The payment a leaf delegation allows, read from its caveats: what the facilitator checks
 * against the requirements before it simulates anything. A leaf that is not bounded as a
 * payment must be (single use, a deadline, the transfer pinned) reads as a reason.
 */
export const readPaymentTerms = (environment: DelegationEnvironment, leaf: Delegation, scheme: PaymentScheme): TermsRead => {
  const e = environment.caveatEnforcers
  const fail = (reason: string): TermsRead => ({ ok: false, reason })
  const timestamp = termsOf(leaf, e["TimestampEnforcer"])
  const limited = termsOf(leaf, e["LimitedCallsEnforcer"])
  if (timestamp === null || limited === null) return fail("the payment delegation repeats a caveat it must hold once")
  if (timestamp === undefined || size(timestamp) !== 32) return fail("the payment delegation has no deadline (TimestampEnforcer)")
  const validBefore = hexToBigInt(slice(timestamp, 16, 32))
  if (validBefore === 0n || validBefore > BigInt(Number.MAX_SAFE_INTEGER)) return fail("the payment delegation's deadline is not a time")
  if (limited === undefined || size(limited) !== 32 || word(limited, 0) !== 1n) {
    return fail("the payment delegation is not single-use (LimitedCallsEnforcer with limit 1)")
  }
  if (scheme === "exact") {
    const exact = termsOf(leaf, e["ExactExecutionEnforcer"])
    if (exact === null) return fail("the payment delegation repeats a caveat it must hold once")
    if (exact === undefined || size(exact) < 52) return fail("the payment delegation does not pin its execution (ExactExecutionEnforcer)")
    const target = getAddress(slice(exact, 0, 20))
    const value = hexToBigInt(slice(exact, 20, 52))
    const transfer = transferArgs(size(exact) === 52 ? "0x" : slice(exact, 52))
    if (value !== 0n || transfer === undefined) return fail("the payment delegation's execution is not a plain token transfer")
    return { ok: true, terms: { scheme, asset: target, payTo: transfer.to, amount: transfer.amount, validBefore: Number(validBefore) } }
  }
  const amount = termsOf(leaf, e["ERC20TransferAmountEnforcer"])
  const calldata = termsOf(leaf, e["AllowedCalldataEnforcer"])
  const valueLte = termsOf(leaf, e["ValueLteEnforcer"])
  if (amount === null || calldata === null || valueLte === null) return fail("the payment delegation repeats a caveat it must hold once")
  if (amount === undefined || size(amount) !== 52) return fail("the payment delegation has no ceiling (ERC20TransferAmountEnforcer)")
  if (calldata === undefined || size(calldata) !== 64 || word(calldata, 0) !== 4n || hexToBigInt(slice(calldata, 32, 44)) !== 0n) {
    return fail("the payment delegation does not pin the recipient (AllowedCalldataEnforcer on the transfer's first argument)")
  }
  if (valueLte === undefined || size(valueLte) !== 32 || word(valueLte, 0) !== 0n) return fail("the payment delegation allows native value")
  return {
    ok: true,
    terms: {
      scheme,
      asset: getAddress(slice(amount, 0, 20)),
      payTo: getAddress(slice(calldata, 44, 64)),
      amount: hexToBigInt(slice(amount, 20, 52)),
      validBefore: Number(validBefore)
    }
  }
}
