/**
 * Approvals above a threshold, held on chain by `ApprovalEnforcer` (contracts/Approvals.sol;
 * docs/onchain.md, "Approvals above a threshold"): the rule's caveat terms, the EIP-712
 * `Approval` an approver signs, the caveat args a redemption carries, and a verifier that
 * checks approvals off chain exactly as the contract will (same digest, same order of checks,
 * same reasons), so a service can refuse a bad approval before anything is relayed.
 */
import { Effect } from "effect"
import {
  type Address,
  concat,
  decodeAbiParameters,
  encodeAbiParameters,
  encodeFunctionData,
  encodePacked,
  type Hash,
  hashTypedData,
  type Hex,
  isAddressEqual,
  recoverAddress,
  size,
  sliceHex,
  toHex,
  zeroAddress
} from "viem"
import type { CallReverted, Chain, ChainUnavailable } from "./Chain.ts"
import { approvalEnforcerAbi } from "./contracts/Approvals.ts"

/** Most approvers a rule may name here (the contract takes up to 255; a person reads every name). */
export const MAX_APPROVERS = 16

/**
 * Per period (issue 44): each threshold bounds what moves WITHOUT approvals per token (or per token
 * and recipient) in each period of `seconds` from `startSeconds`; an approved transfer is not counted.
 */
export interface ApprovalWindow {
  readonly seconds: number
  readonly startSeconds: number
  readonly perRecipient: boolean
}

/**
 * m of n approvers, and per token the most that may move without them (base units): in one
 * transfer, or with `window`, in all the transfers of a period.
 */
export interface ApprovalRule {
  readonly required: number
  readonly approvers: ReadonlyArray<Address>
  readonly thresholds: ReadonlyArray<{ readonly token: Address; readonly units: bigint }>
  readonly window?: ApprovalWindow
}

/** A per-period threshold is counted in 192 bits on chain (one storage slot with the period's index). */
export const MAX_PERIOD_THRESHOLD = 2n ** 192n - 1n
const MAX_UINT64 = 2n ** 64n - 1n
/** The terms' header before the per-transfer part, per period: 0x00 ‖ kind(1) ‖ period(8) ‖ start(8). */
const HEADER_BYTES = 18

/** One execution of a redemption (single call): what an approval names. */
export interface Execution {
  readonly target: Address
  readonly value: bigint
  readonly callData: Hex
}

export interface SignedApproval {
  readonly approver: Address
  readonly signature: Hex
}

/** The caveat args of an approved redemption: one nonce and deadline, every approver's signature of them. */
export interface ApprovalSet {
  readonly nonce: bigint
  /** Unix seconds; the approval is good while the block's timestamp is at or before it. */
  readonly deadline: bigint
  readonly approvals: ReadonlyArray<SignedApproval>
}

/** Why a rule cannot be a caveat, or `undefined` when it can. */
export const invalidRule = (rule: ApprovalRule): string | undefined => {
  const n = rule.approvers.length
  if (n < 1 || n > MAX_APPROVERS) return `an approval rule names 1 to ${MAX_APPROVERS} approvers`
  if (!Number.isInteger(rule.required) || rule.required < 1 || rule.required > n) {
    return "the number of approvals required must be at least 1 and at most the number of approvers"
  }
  if (rule.approvers.some((a) => isAddressEqual(a, zeroAddress))) return "an approver cannot be the zero address"
  if (new Set(rule.approvers.map((a) => a.toLowerCase())).size !== n) return "the approvers must be distinct"
  if (new Set(rule.thresholds.map((t) => t.token.toLowerCase())).size !== rule.thresholds.length) {
    return "an approval threshold names each token once"
  }
  if (rule.thresholds.some((t) => t.units < 0n || t.units >= 2n ** 256n)) return "a threshold is a uint256"
  const w = rule.window
  if (w !== undefined) {
    if (!Number.isInteger(w.seconds) || w.seconds < 1 || BigInt(w.seconds) > MAX_UINT64) return "an approval period is a whole number of seconds, at least 1"
    if (!Number.isInteger(w.startSeconds) || w.startSeconds < 0 || BigInt(w.startSeconds) > MAX_UINT64) return "an approval period starts at a unix second"
    if (rule.thresholds.some((t) => t.units > MAX_PERIOD_THRESHOLD)) return "a per-period threshold is below 2^192 base units"
  }
  return undefined
}

/**
 * ApprovalEnforcer terms: m(1) ‖ n(1) ‖ approvers(20 each) ‖ (token(20) ‖ threshold(32)) per token;
 * per period, after 0x00 ‖ kind(1: per token, 2: per token and recipient) ‖ period(8) ‖ start(8).
 */
export const approvalTerms = (rule: ApprovalRule): Hex => {
  const invalid = invalidRule(rule)
  if (invalid !== undefined) throw new Error(invalid)
  const perTransfer = encodePacked(
    ["uint8", "uint8", ...rule.approvers.map(() => "address" as const), ...rule.thresholds.flatMap(() => ["address", "uint256"] as const)],
    [rule.required, rule.approvers.length, ...rule.approvers, ...rule.thresholds.flatMap((t) => [t.token, t.units] as const)]
  )
  const w = rule.window
  if (w === undefined) return perTransfer
  return concat([
    encodePacked(["uint8", "uint8", "uint64", "uint64"], [0, w.perRecipient ? 2 : 1, BigInt(w.seconds), BigInt(w.startSeconds)]),
    perTransfer
  ])
}

/** The rule in ApprovalEnforcer terms, or `undefined` when the contract would refuse them (`invalid-terms`). */
export const decodeApprovalTerms = (terms: Hex): ApprovalRule | undefined => {
  const length = size(terms)
  if (length < 2) return undefined
  const word = (from: number, to: number) => sliceHex(terms, from, to)
  let window: ApprovalWindow | undefined
  let base = 0
  if (BigInt(word(0, 1)) === 0n) {
    if (length < HEADER_BYTES + 2) return undefined
    const kind = Number(BigInt(word(1, 2)))
    const seconds = BigInt(word(2, 10))
    const startSeconds = BigInt(word(10, 18))
    // Beyond 2^53 no period or start is a time this service can state.
    if ((kind !== 1 && kind !== 2) || seconds < 1n || seconds > BigInt(Number.MAX_SAFE_INTEGER) || startSeconds > BigInt(Number.MAX_SAFE_INTEGER)) {
      return undefined
    }
    window = { seconds: Number(seconds), startSeconds: Number(startSeconds), perRecipient: kind === 2 }
    base = HEADER_BYTES
  }
  const required = Number(BigInt(word(base, base + 1)))
  const n = Number(BigInt(word(base + 1, base + 2)))
  const tokensAt = base + 2 + 20 * n
  if (required < 1 || required > n || length < tokensAt || (length - tokensAt) % 52 !== 0) return undefined
  const thresholds = Array.from({ length: (length - tokensAt) / 52 }, (_, i) => ({
    token: word(tokensAt + 52 * i, tokensAt + 52 * i + 20) as Address,
    units: BigInt(word(tokensAt + 52 * i + 20, tokensAt + 52 * i + 52))
  }))
  // The contract checks every entry's bound, duplicates included.
  if (window !== undefined && thresholds.some((t) => t.units > MAX_PERIOD_THRESHOLD)) return undefined
  // Terms this service never builds but a chain holds: stated as the contract enforces them. It
  // reads a token's FIRST threshold (a later one never applies, so it is never shown), and counts
  // each approver once (the same approver twice is one approver; m distinct ones it can never
  // reach is no rule this service can state).
  const approvers = [...new Set(Array.from({ length: n }, (_, i) => word(base + 2 + 20 * i, base + 22 + 20 * i).toLowerCase() as Address))]
  if (required > approvers.length) return undefined
  return {
    required,
    approvers,
    thresholds: thresholds.filter((t, i) => thresholds.findIndex((x) => x.token.toLowerCase() === t.token.toLowerCase()) === i),
    ...(window === undefined ? {} : { window })
  }
}

const TRANSFER = "0xa9059cbb"

/**
 * Whether the rule asks for approvals: every execution does except one `transfer(address,uint256)`
 * (exactly 68 bytes of call data, no native value) of a token of the rule, at most its threshold.
 * Per period, `unapproved` is what already moved without approvals in the period for that token (and
 * recipient); the transfer then needs approvals when it would take that above the threshold, or
 * before the first period starts.
 */
export const needsApproval = (
  rule: ApprovalRule,
  execution: Execution,
  period?: { readonly unapproved: bigint; readonly started: boolean }
): boolean => {
  if (execution.value !== 0n || size(execution.callData) !== 68 || sliceHex(execution.callData, 0, 4).toLowerCase() !== TRANSFER) return true
  // The contract reads the first entry naming the token.
  const entry = rule.thresholds.find((t) => isAddressEqual(t.token, execution.target))
  if (entry === undefined) return true
  const amount = BigInt(sliceHex(execution.callData, 36, 68))
  if (rule.window === undefined || period === undefined) return amount > entry.units
  if (!period.started) return true
  return amount > entry.units || period.unapproved + amount > entry.units
}

/** The recipient a transfer's call data pays (the low 20 bytes of its first word, as the token reads it). */
export const transferRecipient = (callData: Hex): Address => sliceHex(callData, 16, 36).toLowerCase() as Address

/**
 * What moved without approvals in the current period for `token` (and `recipient`, per recipient)
 * as the enforcer counts it for `caller`'s redemptions of `delegationHash`, and when the period ends
 * (the start itself, before the first period starts).
 */
export const unapprovedInPeriod = (
  chain: ChainReader,
  input: {
    readonly enforcer: Address
    readonly caller: Address
    readonly delegationHash: Hash
    readonly terms: Hex
    readonly token: Address
    readonly recipient: Address
  }
): Effect.Effect<{ readonly spent: bigint; readonly periodEnd: bigint }, ChainUnavailable> =>
  chain.call({
    to: input.enforcer,
    data: encodeFunctionData({
      abi: approvalEnforcerAbi,
      functionName: "unapprovedInPeriod",
      args: [input.caller, input.delegationHash, input.terms, input.token, input.recipient]
    })
  }).pipe(
    Effect.catchTag("CallReverted", (e: CallReverted) => Effect.die(e)),
    Effect.flatMap((answer) =>
      size(answer) !== 64
        ? Effect.die(new Error(`no per-period ApprovalEnforcer answers at ${input.enforcer}`))
        : Effect.succeed({ spent: BigInt(sliceHex(answer, 0, 32)), periodEnd: BigInt(sliceHex(answer, 32, 64)) })
    )
  )

/** The EIP-712 `Approval` type (the contract's `APPROVAL_TYPEHASH`). */
export const APPROVAL_TYPES = {
  Approval: [
    { name: "delegationHash", type: "bytes32" },
    { name: "target", type: "address" },
    { name: "value", type: "uint256" },
    { name: "callData", type: "bytes" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" }
  ]
} as const

export interface ApprovalRequest {
  readonly chainId: number
  /** The ApprovalEnforcer's address (the EIP-712 verifying contract). */
  readonly enforcer: Address
  /** The grant's delegation hash (its permission id). */
  readonly delegationHash: Hash
  readonly execution: Execution
  readonly nonce: bigint
  readonly deadline: bigint
}

/** What each approver signs (`eth_signTypedData_v4`, viem `signTypedData`): the same for all of them. */
export const approvalTypedData = (request: ApprovalRequest) => ({
  domain: { name: "ApprovalEnforcer", version: "1", chainId: request.chainId, verifyingContract: request.enforcer },
  types: APPROVAL_TYPES,
  primaryType: "Approval" as const,
  message: {
    delegationHash: request.delegationHash,
    target: request.execution.target,
    value: request.execution.value,
    callData: request.execution.callData,
    nonce: request.nonce,
    deadline: request.deadline
  }
})

/** The digest the contract checks each signature against (`ApprovalEnforcer.approvalDigest`). */
export const approvalDigest = (request: ApprovalRequest): Hash => hashTypedData(approvalTypedData(request))

/** A fresh nonce: 256 random bits, so approvals need no counter (spent per delegation on chain). */
export const randomApprovalNonce = (): bigint => BigInt(toHex(crypto.getRandomValues(new Uint8Array(32))))

const argsAbi = [
  { type: "uint256", name: "nonce" },
  { type: "uint256", name: "deadline" },
  { type: "tuple[]", name: "approvals", components: [{ type: "address", name: "approver" }, { type: "bytes", name: "signature" }] }
] as const

/** ApprovalEnforcer caveat args: abi.encode(nonce, deadline, (approver, signature)[]). */
export const approvalArgs = (set: ApprovalSet): Hex =>
  encodeAbiParameters(argsAbi, [set.nonce, set.deadline, set.approvals.map((a) => ({ approver: a.approver, signature: a.signature }))])

export const decodeApprovalArgs = (args: Hex): ApprovalSet => {
  const [nonce, deadline, approvals] = decodeAbiParameters(argsAbi, args)
  return { nonce, deadline, approvals }
}

/** The contract's revert reasons for approvals, in the order it checks them. */
export type ApprovalRefusal =
  | "ApprovalEnforcer:not-enough-approvals"
  | "ApprovalEnforcer:expired"
  | "ApprovalEnforcer:nonce-used"
  | "ApprovalEnforcer:approver-not-named"
  | "ApprovalEnforcer:duplicate-approver"
  | "ApprovalEnforcer:approver-is-redeemer"
  | "ApprovalEnforcer:invalid-signature"

export type ApprovalCheck = { readonly ok: true } | { readonly ok: false; readonly reason: ApprovalRefusal; readonly approver?: Address }

/** secp256k1 order / 2: the contract refuses the high-s twin of a signature. */
const HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n
const ERC1271_MAGIC = "0x1626ba7e"
const erc1271Abi = [{
  type: "function",
  name: "isValidSignature",
  stateMutability: "view",
  inputs: [{ name: "hash", type: "bytes32" }, { name: "signature", type: "bytes" }],
  outputs: [{ name: "", type: "bytes4" }]
}] as const

/** What the verifier reads from the chain: code, and `eth_call` (a `Chain` service has both). */
export type ChainReader = Pick<Chain["Service"], "getCode" | "call">

/**
 * One approver's signature as the contract checks it: ECDSA (65 bytes, v 27 or 28, low s) for an
 * address without code, ERC-1271 `isValidSignature` answering exactly the magic word for one with code.
 */
export const isValidApproverSignature = (chain: ChainReader, approver: Address, digest: Hash, signature: Hex) =>
  Effect.gen(function*() {
    const code = yield* chain.getCode(approver)
    if (code === undefined || code === "0x") {
      if (size(signature) !== 65) return false
      const v = Number(BigInt(sliceHex(signature, 64, 65)))
      if (BigInt(sliceHex(signature, 32, 64)) > HALF_ORDER || (v !== 27 && v !== 28)) return false
      const recovered = yield* Effect.promise(() => recoverAddress({ hash: digest, signature }).catch(() => zeroAddress))
      return !isAddressEqual(recovered, zeroAddress) && isAddressEqual(recovered, approver)
    }
    const data = encodeFunctionData({ abi: erc1271Abi, functionName: "isValidSignature", args: [digest, signature] })
    return yield* chain.call({ to: approver, data }).pipe(
      Effect.map((result) => result.toLowerCase() === concat([ERC1271_MAGIC, toHex(0n, { size: 28 })])),
      Effect.catchTag("CallReverted", () => Effect.succeed(false))
    )
  })

const ownerAbi = [{ type: "function", name: "owner", stateMutability: "view", inputs: [], outputs: [{ name: "", type: "address" }] }] as const

/**
 * `owner()` of an account with code as ApprovalEnforcer's `ownerOf` reads it (a HybridDeleGator's
 * EOA owner), or `undefined`: no code, no such function, a revert, or an answer that is no address.
 */
export const ownerOfAccount = (chain: ChainReader, account: Address): Effect.Effect<Address | undefined, ChainUnavailable> =>
  Effect.gen(function*() {
    const code = yield* chain.getCode(account)
    if (code === undefined || code === "0x") return undefined
    const answer = yield* chain.call({ to: account, data: encodeFunctionData({ abi: ownerAbi, functionName: "owner" }) }).pipe(
      Effect.catchTag("CallReverted", () => Effect.succeed("0x" as Hex))
    )
    if (size(answer) !== 32 || BigInt(answer) >> 160n !== 0n || BigInt(answer) === 0n) return undefined
    return sliceHex(answer, 12, 32) as Address
  })

const getSignersAbi = [{ type: "function", name: "getSigners", stateMutability: "view", inputs: [], outputs: [{ name: "", type: "address[]" }] }] as const

/**
 * The address signers of an account as the chain holds them: `owner()` (a HybridDeleGator's EOA
 * key) and `getSigners()` (a MultiSigDeleGator's); none for an address without code or that
 * answers neither. (A passkey is no address: it can never be an approver.)
 */
export const signersOfAccount = (chain: ChainReader, account: Address): Effect.Effect<ReadonlyArray<Address>, ChainUnavailable> =>
  Effect.gen(function*() {
    const owner = yield* ownerOfAccount(chain, account)
    if (owner === undefined && (yield* chain.getCode(account).pipe(Effect.map((c) => c === undefined || c === "0x")))) return []
    const answer = yield* chain.call({ to: account, data: encodeFunctionData({ abi: getSignersAbi, functionName: "getSigners" }) }).pipe(
      Effect.catchTag("CallReverted", () => Effect.succeed("0x" as Hex))
    )
    const listed = yield* Effect.sync(() => {
      try {
        return size(answer) < 64 ? [] : [...decodeAbiParameters([{ type: "address[]" }], answer)[0]]
      } catch {
        return []
      }
    })
    return [...(owner === undefined ? [] : [owner]), ...listed.filter((a) => !isAddressEqual(a, zeroAddress))]
  })

/**
 * Checks approvals for one execution of one delegation as ApprovalEnforcer's `beforeHook` will:
 * the same reasons in the same order. `caller` is who calls the enforcer (the DelegationManager);
 * `nowSeconds` the time to hold the deadline against (the next block's, at the earliest).
 * An execution the rule lets through without approvals is `ok` whatever the set holds.
 */
export const verifyApprovals = (
  chain: ChainReader,
  input: {
    readonly chainId: number
    readonly enforcer: Address
    readonly caller: Address
    readonly delegationHash: Hash
    readonly rule: ApprovalRule
    readonly execution: Execution
    readonly set: ApprovalSet | undefined
    readonly nowSeconds: bigint
    /** Who redeems (`msg.sender` of `redeemDelegations`): none of its own may approve. */
    readonly redeemer: Address
  }
): Effect.Effect<ApprovalCheck, ChainUnavailable> =>
  Effect.gen(function*() {
    const refuse = (reason: ApprovalRefusal, approver?: Address): ApprovalCheck =>
      approver === undefined ? { ok: false, reason } : { ok: false, reason, approver }
    if (input.rule.window === undefined ? !needsApproval(input.rule, input.execution) : !(yield* needsApprovalNow(chain, input))) return { ok: true }
    const set = input.set
    if (set === undefined || set.approvals.length < input.rule.required) return refuse("ApprovalEnforcer:not-enough-approvals")
    if (input.nowSeconds > set.deadline) return refuse("ApprovalEnforcer:expired")
    const spent = yield* chain.call({
      to: input.enforcer,
      data: encodeFunctionData({ abi: approvalEnforcerAbi, functionName: "spent", args: [input.caller, input.delegationHash, set.nonce] })
    }).pipe(Effect.catchTag("CallReverted", (e: CallReverted) => Effect.die(e)))
    if (size(spent) !== 32) return yield* Effect.die(new Error(`no ApprovalEnforcer answers at ${input.enforcer}`))
    if (BigInt(spent) !== 0n) return refuse("ApprovalEnforcer:nonce-used")
    const digest = approvalDigest({ ...input, nonce: set.nonce, deadline: set.deadline })
    const seen = new Set<number>()
    const redeemerOwner = yield* ownerOfAccount(chain, input.redeemer)
    const isOwn = (a: Address | undefined) =>
      a !== undefined && (isAddressEqual(a, input.redeemer) || (redeemerOwner !== undefined && isAddressEqual(a, redeemerOwner)))
    for (const { approver, signature } of set.approvals) {
      const index = input.rule.approvers.findIndex((a) => isAddressEqual(a, approver))
      if (index < 0) return refuse("ApprovalEnforcer:approver-not-named", approver)
      if (seen.has(index)) return refuse("ApprovalEnforcer:duplicate-approver", approver)
      seen.add(index)
      if (isOwn(approver) || isOwn(yield* ownerOfAccount(chain, approver))) return refuse("ApprovalEnforcer:approver-is-redeemer", approver)
      if (!(yield* isValidApproverSignature(chain, approver, digest, signature))) return refuse("ApprovalEnforcer:invalid-signature", approver)
    }
    return { ok: true }
  })

/** The enforcer's own `needsApprovalNow` (per-period rules depend on what it counted; the chain's clock). */
const needsApprovalNow = (
  chain: ChainReader,
  input: { readonly enforcer: Address; readonly caller: Address; readonly delegationHash: Hash; readonly rule: ApprovalRule; readonly execution: Execution }
): Effect.Effect<boolean, ChainUnavailable> =>
  chain.call({
    to: input.enforcer,
    data: encodeFunctionData({
      abi: approvalEnforcerAbi,
      functionName: "needsApprovalNow",
      args: [
        input.caller,
        input.delegationHash,
        approvalTerms(input.rule),
        encodePacked(["address", "uint256", "bytes"], [input.execution.target, input.execution.value, input.execution.callData])
      ]
    })
  }).pipe(
    Effect.catchTag("CallReverted", (e: CallReverted) => Effect.die(e)),
    Effect.map((answer) => BigInt(answer) !== 0n)
  )
