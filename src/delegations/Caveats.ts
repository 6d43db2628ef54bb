/**
 * Delegation Framework encodings of the delegations feature: the EIP-712 typed data the owner
 * signs, the call data of the enable, revoke, freeze and redeem operations, and what an
 * executed enable leaves in the logs. A grant's own delegation and its caveats are built in
 * `Grant.ts` (one delegation per grant, every limit on chain). `makeLeg` is the earlier
 * per-token shape, kept for hand-made delegations in tests and for the gas comparison in
 * `bench/delegation-gas.ts`: it does not hold a per-action maximum, a 2+ allowlist or a count
 * across tokens, and the service no longer builds grants with it. Mapping: docs/delegations.md.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { type Delegation, ExecutionMode, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import {
  createCaveatBuilder,
  encodeDelegations,
  encodeSingleExecution,
  SIGNABLE_DELEGATION_TYPED_DATA,
  toDelegationStruct
} from "@metamask/smart-accounts-kit/utils"
import {
  type Address,
  decodeEventLog,
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  type Hash,
  type Hex,
  pad,
  recoverTypedDataAddress,
  toHex
} from "viem"
import { type AccountStack, type Call, delegationArg } from "../chain/Accounts4337.ts"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { isNative } from "../tokens/Native.ts"
import { TRANSFER_SELECTOR } from "./Policy.ts"

export type { Delegation }

export interface LegTerms {
  readonly delegator: Address
  readonly delegate: Address
  readonly token: Address
  readonly budgetUnits: bigint
  readonly maxActions: number
  /** Unix seconds; the TimestampEnforcer refuses redemptions at or after it. */
  readonly expiresAtSeconds: number
  /** Set when the allowlist has exactly one recipient: the chain then pins it too. */
  readonly onlyRecipient?: Address
  readonly salt: Hex
}

/** The earlier per-token delegation ("leg"), unsigned (`signature: "0x"`); see the header. */
export const makeLeg = (environment: DelegationEnvironment, terms: LegTerms): Delegation => {
  let builder = createCaveatBuilder(environment as never)
    .addCaveat("allowedTargets", { targets: [terms.token] })
    .addCaveat("allowedMethods", { selectors: [TRANSFER_SELECTOR] })
    .addCaveat("valueLte", { maxValue: 0n })
    .addCaveat("erc20TransferAmount", { tokenAddress: terms.token, maxAmount: terms.budgetUnits })
    .addCaveat("limitedCalls", { limit: terms.maxActions })
    .addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: terms.expiresAtSeconds })
  if (terms.onlyRecipient !== undefined) {
    // transfer(address to, uint256): the recipient word starts after the 4-byte selector.
    builder = builder.addCaveat("allowedCalldata", { startIndex: 4, value: pad(terms.onlyRecipient, { size: 32 }) })
  }
  return {
    delegate: terms.delegate,
    delegator: terms.delegator,
    authority: ROOT_AUTHORITY as Hex,
    caveats: builder.build(),
    salt: terms.salt,
    signature: "0x"
  }
}

export const randomSalt = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)))

/** The EIP-712 typed data the owner signs for a leg (domain: the DelegationManager). */
export const legTypedData = (leg: Delegation, chainId: number, delegationManager: Address) => {
  const s = toDelegationStruct({ ...leg, signature: "0x" })
  return {
    domain: { name: "DelegationManager", version: "1", chainId, verifyingContract: delegationManager },
    types: SIGNABLE_DELEGATION_TYPED_DATA as unknown as Record<string, ReadonlyArray<{ name: string; type: string }>>,
    primaryType: "Delegation" as const,
    message: {
      delegate: s.delegate,
      delegator: s.delegator,
      authority: s.authority,
      caveats: s.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms })),
      salt: s.salt
    }
  }
}

/**
 * Who signed a leg. HybridDeleGator's ERC-1271 accepts the owner's ECDSA signature over
 * this digest, which is what the DelegationManager checks at every redemption.
 */
export const recoverLegSigner = async (leg: Delegation, signature: Hex, chainId: number, delegationManager: Address) => {
  const td = legTypedData(leg, chainId, delegationManager)
  return recoverTypedDataAddress({ ...td, signature } as unknown as Parameters<typeof recoverTypedDataAddress>[0])
}

const dmArg = delegationArg

/**
 * The enable operation's calls: for each leg, `DelegationManager.disableDelegation`
 * then `enableDelegation`. Net effect on chain: none (the leg stays usable), but the
 * operation (which also deploys the account when needed, so that its ERC-1271 can
 * vouch for the signature) carries every leg in full in its call data and emits
 * `EnabledDelegation(hash, delegator, delegate, delegation)` for each: the enable is
 * a verifiable on-chain record whose transaction hash the policy snapshot keeps.
 */
export const enableCalls = (delegationManager: Address, legs: ReadonlyArray<Delegation>): ReadonlyArray<Call> =>
  legs.flatMap((leg) => [
    { to: delegationManager, data: encodeFunctionData({ abi: DelegationManager, functionName: "disableDelegation", args: [dmArg(leg)] }) },
    { to: delegationManager, data: encodeFunctionData({ abi: DelegationManager, functionName: "enableDelegation", args: [dmArg(leg)] }) }
  ])

/** The account-freeze contribution: disable each live leg (the unfreeze re-enables them). */
export const disableCalls = (delegationManager: Address, legs: ReadonlyArray<Delegation>): ReadonlyArray<Call> =>
  legs.map((leg) => ({
    to: delegationManager,
    data: encodeFunctionData({ abi: DelegationManager, functionName: "disableDelegation", args: [dmArg(leg)] })
  }))

export const reenableCalls = (delegationManager: Address, legs: ReadonlyArray<Delegation>): ReadonlyArray<Call> =>
  legs.map((leg) => ({
    to: delegationManager,
    data: encodeFunctionData({ abi: DelegationManager, functionName: "enableDelegation", args: [dmArg(leg)] })
  }))

/** Revoke call data: the account's own `disableDelegation` for one leg, a batch of DM calls for several. */
export const revokeCallData = (stack: AccountStack["Service"], delegationManager: Address, legs: ReadonlyArray<Delegation>): Hex => {
  if (legs.length === 1) return stack.encodeDisableDelegation(legs[0]!)
  return stack.encodeExecute(legs.map((leg) => ({
    to: delegationManager,
    data: encodeFunctionData({ abi: DelegationManager, functionName: "disableDelegation", args: [dmArg(leg)] })
  })))
}

/**
 * Every permission id a revoke operation's own call data disables: the account's
 * `disableDelegation(d)`, or `execute` of one or more `DelegationManager.disableDelegation(d)`
 * (calls to any other target are ignored: they disable nothing).
 */
export const disabledPermissionIds = (
  stack: AccountStack["Service"],
  delegationManager: Address,
  callData: Hex
): ReadonlyArray<Hash> => {
  const direct = stack.decodeRevokedPermissionId(callData)
  const calls = stack.decodeExecute(callData)
  if (calls === undefined) return direct === undefined ? [] : [direct]
  const ids: Array<Hash> = []
  for (const call of calls) {
    if (call.to.toLowerCase() !== delegationManager.toLowerCase() || call.data === undefined) continue
    try {
      const decoded = decodeFunctionData({ abi: DelegationManager, data: call.data })
      if (decoded.functionName !== "disableDelegation") continue
      const id = stack.decodeRevokedPermissionId(stack.encodeExecute([call]))
      if (id !== undefined) ids.push(id)
    } catch {
      // not a DelegationManager call
    }
  }
  return ids
}

/** The permission ids an executed operation's logs show enabled by `delegationManager`. */
export const enabledPermissionIds = (
  delegationManager: Address,
  logs: ReadonlyArray<{ readonly address: Address; readonly topics: ReadonlyArray<Hex>; readonly data: Hex }>
): ReadonlyArray<Hash> => {
  const ids: Array<Hash> = []
  for (const log of logs) {
    if (log.address.toLowerCase() !== delegationManager.toLowerCase()) continue
    try {
      const ev = decodeEventLog({ abi: DelegationManager, topics: log.topics as [Hex, ...Array<Hex>], data: log.data })
      if (ev.eventName === "EnabledDelegation") ids.push((ev.args as { delegationHash: Hash }).delegationHash)
    } catch {
      // another event
    }
  }
  return ids
}

/**
 * The call the delegate's account makes: `DelegationManager.redeemDelegations([ [signed leg] ],
 * [SingleDefault], [transfer])`, the transfer executing from the owner's account (an ERC-20
 * `transfer`, or for the native coin the value sent to the recipient with no call data).
 */
/**
 * How many encoded permission contexts `permissionContextOf` keeps (a few KB each): the grants
 * in use at once, times their (token, recipient) choices.
 */
const PERMISSION_CONTEXTS_KEPT = 512
const permissionContexts = new Map<string, Hex>()

/**
 * `encodeDelegations([signed])`, remembered: every action under one grant redeems the same
 * signed delegation with the same caveat args (its token's and recipient's index) unless
 * approvals are attached, and the ABI encoding (@metamask/abi-utils) costs ≈ 2 ms of CPU.
 * The key is every field of the delegation the encoding reads (signature, salt, each
 * caveat's enforcer, terms and args), so an entry is right for as long as it is kept: a
 * revoked or replaced grant is a different key (or refused before its redemption is built),
 * never a stale answer. Least recently used entries go first.
 */
export const permissionContextOf = (signed: Delegation): Hex => {
  const key = [
    signed.delegate,
    signed.delegator,
    signed.authority,
    String(signed.salt),
    signed.signature,
    ...signed.caveats.flatMap((c) => [c.enforcer, c.terms, c.args])
  ].join("|").toLowerCase()
  const kept = permissionContexts.get(key)
  if (kept !== undefined) {
    // Most recently used last (a Map iterates in insertion order).
    permissionContexts.delete(key)
    permissionContexts.set(key, kept)
    return kept
  }
  const encoded = encodeDelegations([signed])
  permissionContexts.set(key, encoded)
  if (permissionContexts.size > PERMISSION_CONTEXTS_KEPT) permissionContexts.delete(permissionContexts.keys().next().value!)
  return encoded
}

export const redeemCall = (
  delegationManager: Address,
  signedLeg: Delegation,
  transfer: { readonly token: Address; readonly to: Address; readonly units: bigint }
): Call => {
  const execution = isNative(transfer.token)
    ? encodeSingleExecution({ target: transfer.to, value: transfer.units, callData: "0x" })
    : encodeSingleExecution({
      target: transfer.token,
      value: 0n,
      callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [transfer.to, transfer.units] })
    })
  return {
    to: delegationManager,
    data: encodeFunctionData({
      abi: DelegationManager,
      functionName: "redeemDelegations",
      args: [[permissionContextOf(signedLeg)], [ExecutionMode.SingleDefault as Hex], [execution]]
    })
  }
}

/** `DelegationManager.disabledDelegations(permissionId)` call data (for on-chain checks). */
export const disabledDelegationsCall = (permissionId: Hash) =>
  encodeFunctionData({ abi: DelegationManager, functionName: "disabledDelegations", args: [permissionId] })
