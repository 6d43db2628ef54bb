/**
 * Guardians, recovery and the safe address on chain (docs/account.md, "Guardians and
 * recovery"; the contract: src/chain/contracts/Recovery.sol).
 *
 *  - Settings are the account's own calls to the Recovery contract (owner operations):
 *    `addGuardian(guardian, threshold)`, `removeGuardian(guardian, threshold)`, `setDelay`,
 *    `setSafeAddress`, `cancel`. Each change of guardians, threshold or delay voids every
 *    approval given before and stops a started recovery.
 *  - The account gives the Recovery contract one delegation whose caveats allow only
 *    `updateSigners` on the account itself, value 0 (AllowedTargets, AllowedMethods, ValueLte):
 *    even a faulty Recovery could do nothing else with it.
 *  - Guardians approve a proposal of new signers at the account's current nonce, each by its
 *    own transaction or an EIP-712 signature (`approvalTypedData`) anyone submits; the approval
 *    reaching the threshold starts the delay; after it anyone executes.
 */
import { type Delegation, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import {
  type Address,
  BaseError,
  encodeFunctionData,
  getAddress,
  type Hash,
  type Hex,
  hashStruct,
  toFunctionSelector,
  type TypedDataDefinition,
  zeroAddress,
  zeroHash
} from "viem"
import { type Call, delegationArg } from "./Accounts4337.ts"
import { sameAddress } from "./AccountDelegations.ts"
import { Chain, ChainUnavailable } from "./Chain.ts"
import { recoveryAbi } from "./contracts/Recovery.ts"
import type { Checked, PasskeyPublicKey } from "./Devices.ts"
import type { DelegationEnvironment } from "./Network.ts"

export { recoveryAbi }

/** The contract's bounds (Recovery.sol): the service checks them first, for a clear 400. */
export const RECOVERY_LIMITS = { minDelaySeconds: 3_600, maxDelaySeconds: 30 * 86_400, defaultDelaySeconds: 2 * 86_400, maxGuardians: 16 } as const

/** The signers a recovery puts on the account (replacing every signer it holds). */
export interface RecoverySigners {
  readonly owner: Address | null
  readonly passkeys: ReadonlyArray<PasskeyPublicKey>
}

const signersArg = (s: RecoverySigners) => ({
  owner: s.owner ?? zeroAddress,
  keyIds: s.passkeys.map((k) => k.keyId),
  xs: s.passkeys.map((k) => k.x),
  ys: s.passkeys.map((k) => k.y)
})

const UPDATE_SIGNERS = toFunctionSelector("updateSigners(address,string[],uint256[],uint256[])")

/** The account's delegation to the Recovery contract, unsigned: only `updateSigners` on the account itself. */
export const makeRecoveryDelegation = (
  environment: DelegationEnvironment,
  terms: { readonly account: Address; readonly recovery: Address; readonly salt: Hex }
): Delegation => ({
  delegate: terms.recovery,
  delegator: terms.account,
  authority: ROOT_AUTHORITY as Hex,
  caveats: createCaveatBuilder(environment as never)
    .addCaveat("allowedTargets", { targets: [terms.account] })
    .addCaveat("allowedMethods", { selectors: [UPDATE_SIGNERS] })
    .addCaveat("valueLte", { maxValue: 0n })
    .build()
    .map((c) => ({ ...c, args: "0x" as Hex })),
  salt: terms.salt,
  signature: "0x"
})

// ---- the account's own calls (owner operations) ----

const call = (recovery: Address, data: Hex): Call => ({ to: recovery, value: 0n, data })

export const addGuardianCall = (recovery: Address, guardian: Address, threshold: number): Call =>
  call(recovery, encodeFunctionData({ abi: recoveryAbi, functionName: "addGuardian", args: [guardian, BigInt(threshold)] }))

export const removeGuardianCall = (recovery: Address, guardian: Address, threshold: number): Call =>
  call(recovery, encodeFunctionData({ abi: recoveryAbi, functionName: "removeGuardian", args: [guardian, BigInt(threshold)] }))

export const setDelayCall = (recovery: Address, delaySeconds: number): Call =>
  call(recovery, encodeFunctionData({ abi: recoveryAbi, functionName: "setDelay", args: [BigInt(delaySeconds)] }))

/** `null` clears it. */
export const setSafeAddressCall = (recovery: Address, safeAddress: Address | null): Call =>
  call(recovery, encodeFunctionData({ abi: recoveryAbi, functionName: "setSafeAddress", args: [safeAddress ?? zeroAddress] }))

/** Any device of the owner stops a started recovery (and voids approvals gathered so far). */
export const cancelRecoveryCall = (recovery: Address): Call =>
  call(recovery, encodeFunctionData({ abi: recoveryAbi, functionName: "cancel", args: [] }))

/**
 * The guardians after adding (`add`) or removing (`remove`) one, with `threshold`, or why the
 * contract would refuse it: the field for a 400 before any operation is built.
 */
export const checkGuardianChange = (
  account: Address,
  current: ReadonlyArray<Address>,
  change: { readonly add: Address } | { readonly remove: Address },
  threshold: number
): Checked<ReadonlyArray<Address>> => {
  const invalid = (field: string, message: string): Checked<ReadonlyArray<Address>> => ({ _tag: "Invalid", field, message })
  let next: ReadonlyArray<Address>
  if ("add" in change) {
    if (sameAddress(change.add, zeroAddress) || sameAddress(change.add, account)) return invalid("guardian", "a guardian is another address than the account")
    if (current.some((g) => sameAddress(g, change.add))) return invalid("guardian", "already a guardian")
    if (current.length >= RECOVERY_LIMITS.maxGuardians) return invalid("guardian", `at most ${RECOVERY_LIMITS.maxGuardians} guardians`)
    next = [...current, change.add]
  } else {
    if (!current.some((g) => sameAddress(g, change.remove))) return invalid("guardian", "not a guardian")
    next = current.filter((g) => !sameAddress(g, change.remove))
  }
  const ok = Number.isInteger(threshold) && (next.length === 0 ? threshold === 0 : threshold >= 1 && threshold <= next.length)
  if (!ok) return invalid("threshold", next.length === 0 ? "with no guardian the threshold is 0" : `the threshold is between 1 and ${next.length}`)
  return { _tag: "Ok", value: next }
}

// ---- guardians ----

/** The EIP-712 types of a guardian's approval (Recovery.sol's `RecoveryApproval`). */
export const APPROVAL_TYPES = {
  RecoveryApproval: [
    { name: "account", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "owner", type: "address" },
    { name: "keyIds", type: "string[]" },
    { name: "xs", type: "uint256[]" },
    { name: "ys", type: "uint256[]" }
  ]
} as const

const approvalMessage = (account: Address, nonce: bigint, signers: RecoverySigners) => ({ account, nonce, ...signersArg(signers) })

/** What a guardian signs (EIP-712, domain "Recovery" v1) to approve `signers` for `account` at `nonce`. */
export const approvalTypedData = (
  config: { readonly chainId: number; readonly recovery: Address },
  account: Address,
  nonce: bigint,
  signers: RecoverySigners
): TypedDataDefinition =>
  ({
    domain: { name: "Recovery", version: "1", chainId: config.chainId, verifyingContract: config.recovery },
    types: APPROVAL_TYPES,
    primaryType: "RecoveryApproval",
    message: approvalMessage(account, nonce, signers)
  }) as TypedDataDefinition

/** The recovery's id: the approval's EIP-712 struct hash (Recovery.recoveryId). */
export const recoveryIdOf = (account: Address, nonce: bigint, signers: RecoverySigners): Hash =>
  hashStruct({ data: approvalMessage(account, nonce, signers), primaryType: "RecoveryApproval", types: APPROVAL_TYPES })

/**
 * Approvals of `signers` (anyone sends it): each guardian's EIP-712 signature, or `0x` for the
 * sender of this very transaction when it is a guardian.
 */
export const approveCall = (
  recovery: Address,
  account: Address,
  signers: RecoverySigners,
  approvals: ReadonlyArray<{ readonly guardian: Address; readonly signature: Hex }>
): Call =>
  call(recovery, encodeFunctionData({
    abi: recoveryAbi,
    functionName: "approve",
    args: [account, signersArg(signers), approvals.map((a) => a.guardian), approvals.map((a) => a.signature)]
  }))

/** Executes a started recovery after its delay (anyone sends it), with the account's signed delegation to the contract. */
export const executeRecoveryCall = (recovery: Address, account: Address, signers: RecoverySigners, delegation: Delegation): Call =>
  call(recovery, encodeFunctionData({ abi: recoveryAbi, functionName: "execute", args: [account, signersArg(signers), delegationArg(delegation)] }))

// ---- reads ----

export interface RecoveryState {
  readonly guardians: ReadonlyArray<Address>
  readonly threshold: number
  readonly delaySeconds: number
  /** Approvals are given for this nonce; every cancel, execution and settings change bumps it. */
  readonly nonce: bigint
  /** The started recovery, if any. */
  readonly started: { readonly recoveryId: Hash; readonly executeAfter: bigint } | null
  readonly safeAddress: Address | null
}

const rpc = <A>(operation: string, f: () => Promise<A>) =>
  Effect.tryPromise({
    try: f,
    catch: (cause) => new ChainUnavailable({ operation, message: cause instanceof BaseError ? cause.shortMessage : String(cause), cause })
  })

/** The account's guardians, threshold, delay, nonce, started recovery and safe address, as the contract holds them. */
export const readRecovery = Effect.fn("Recovery.read")(function*(recovery: Address, account: Address) {
  const chain = yield* Chain
  const [guardians, threshold, delay, nonce, started, executeAfter, safeAddress] = yield* rpc("settingsOf", () =>
    chain.client.readContract({ address: recovery, abi: recoveryAbi, functionName: "settingsOf", args: [account] }))
  return {
    guardians: guardians.map((g) => getAddress(g)),
    threshold: Number(threshold),
    delaySeconds: Number(delay),
    nonce,
    started: started === zeroHash ? null : { recoveryId: started, executeAfter },
    safeAddress: safeAddress === zeroAddress ? null : getAddress(safeAddress)
  } satisfies RecoveryState
})

/** How many guardians approved recovery `recoveryId`, and whether `guardian` did. */
export const readApprovals = Effect.fn("Recovery.readApprovals")(function*(recovery: Address, recoveryId: Hash, guardian?: Address) {
  const chain = yield* Chain
  const count = yield* rpc("approvals", () => chain.client.readContract({ address: recovery, abi: recoveryAbi, functionName: "approvals", args: [recoveryId] }))
  const approved = guardian === undefined
    ? undefined
    : yield* rpc("hasApproved", () =>
      chain.client.readContract({ address: recovery, abi: recoveryAbi, functionName: "hasApproved", args: [recoveryId, guardian] }))
  return { approvals: Number(count), approved }
})

/** The recovery events of `account` (what a follower notifies on: started, approved, cancelled, executed; and settings). */
export const recoveryEvents = Effect.fn("Recovery.events")(function*(recovery: Address, account: Address, fromBlock = 0n) {
  const chain = yield* Chain
  return yield* rpc("Recovery logs", () => chain.client.getContractEvents({ address: recovery, abi: recoveryAbi, args: { account }, fromBlock }))
})

/** Events that move an account's recovery nonce (`bump`): every approval given before them is void. */
const NONCE_MOVES: ReadonlySet<string> = new Set(["GuardianAdded", "GuardianRemoved", "DelayChanged", "RecoveryCancelled", "RecoveryExecuted"])

/**
 * How many guardian approvals stand at the account's current nonce: `RecoveryApproved` events
 * since its last nonce move (the events come in chain order). What a cancel with no recovery
 * started still voids; none: such a cancel reduces no risk.
 */
export const standingApprovals = Effect.fn("Recovery.standingApprovals")(function*(recovery: Address, account: Address) {
  let count = 0
  for (const event of yield* recoveryEvents(recovery, account)) {
    if (NONCE_MOVES.has(event.eventName)) count = 0
    else if (event.eventName === "RecoveryApproved") count++
  }
  return count
})
