/**
 * Every permission context a transaction redeemed, decoded from its call data and confirmed by its
 * receipt, whatever the depth of the chain of delegations and whoever sent it (pure; issue 24, item 5):
 *
 * - where `DelegationManager.redeemDelegations` was called, and by whom (its `msg.sender`, the
 *   redeemer every caveat sees): the transaction itself (an EOA's `sendTransactionWithDelegation`),
 *   a user operation's `execute` in `EntryPoint.handleOps` (a smart account; only operations whose
 *   `UserOperationEvent` says they succeeded), or an account's `execute` its owner called directly;
 * - each context's delegations, leaf first as the call carries them (delegator, delegate, hash),
 *   kept only when the DelegationManager logged `RedeemedDelegation` for its root with that redeemer
 *   (it logs one per delegation once the whole call executed);
 * - what moved: the ERC-20 `Transfer`s out of the root delegator among the logs that call emitted,
 *   matched to the context's own transfer executions (token, recipient, amount), and native value
 *   the execution sent (no log shows it; it moved because the call executed).
 *
 * The RedeemedDelegation events alone cannot say this: they are emitted together after every
 * execution of the call, so transfers cannot be told apart by position, and the event's delegate is
 * the grant's, not the redeemer at the end of the chain.
 */
import { DelegationManager, HybridDeleGator } from "@metamask/delegation-abis"
import { type Address, decodeAbiParameters, erc20Abi, type Hash, type Hex, slice } from "viem"
import { entryPoint07Abi } from "viem/account-abstraction"
import { NATIVE_ADDRESS } from "../tokens/Native.ts"
import { callDecoder, eventDecoder } from "./AbiDecode.ts"
import { delegationHashOf, type RawLog, redemptionsIn } from "./Redemptions.ts"

export interface ChainLink {
  readonly hash: Hash
  readonly delegator: Address
  readonly delegate: Address
}

export interface Moved {
  /** The ERC-20 token, or the native coin's ERC-7528 address. */
  readonly token: Address
  readonly to: Address
  readonly units: bigint
  /** The `Transfer` log (absent for native value). */
  readonly logIndex?: number
}

export interface Execution {
  readonly target: Address
  readonly value: bigint
  readonly callData: Hex
}

export interface RedeemedContext {
  /** The delegations, leaf first (the redeemer's own delegation) to the root (the grant). */
  readonly chain: ReadonlyArray<ChainLink>
  /** The leaf's signed caveats (what a payment delegation allows: src/payments reads them). */
  readonly leafCaveats: ReadonlyArray<{ readonly enforcer: Address; readonly terms: Hex }>
  readonly rootHash: Hash
  readonly rootDelegator: Address
  /** `msg.sender` of `redeemDelegations`. */
  readonly redeemer: Address
  readonly via: "transaction" | "user_operation" | "account_execute"
  readonly userOpHash?: Hash
  readonly executions: ReadonlyArray<Execution>
  readonly moved: ReadonlyArray<Moved>
  /** The root's `RedeemedDelegation` log. */
  readonly logIndex: number
}

export interface TransactionInput {
  readonly from: Address
  readonly to: Address | null
  readonly input: Hex
}

export interface ReceiptInput {
  readonly status: "success" | "reverted"
  readonly logs: ReadonlyArray<RawLog>
}

interface DmCall {
  readonly sender: Address
  readonly data: Hex
  readonly via: RedeemedContext["via"]
  readonly userOpHash?: Hash
  /** Log indexes the call's execution may have emitted: (after, before). */
  readonly window: { readonly after: number; readonly before: number }
}

const lower = <S extends string>(s: S) => s.toLowerCase() as S

/** A permission context's ABI type, as the DelegationManager decodes it (the kit's `DELEGATION_ARRAY_ABI_TYPES`). */
const permissionContextParams = [{
  type: "tuple[]",
  components: [
    { name: "delegate", type: "address" },
    { name: "delegator", type: "address" },
    { name: "authority", type: "bytes32" },
    { name: "caveats", type: "tuple[]", components: [{ name: "enforcer", type: "address" }, { name: "terms", type: "bytes" }, { name: "args", type: "bytes" }] },
    { name: "salt", type: "uint256" },
    { name: "signature", type: "bytes" }
  ]
}] as const

export interface ContextDelegation {
  readonly delegate: Address
  readonly delegator: Address
  readonly authority: Hex
  readonly caveats: ReadonlyArray<{ readonly enforcer: Address; readonly terms: Hex; readonly args: Hex }>
  readonly salt: bigint
  readonly signature: Hex
}

/**
 * The delegations a permission context carries, leaf first (throws on bytes that do not decode).
 * viem's decoder, not the kit's `decodeDelegations` (@metamask/abi-utils, which throws and catches
 * a parser error per tuple probe): the same delegations (test/delegations/redemptions.test.ts) at
 * a fraction of the CPU, and the follower decodes every redemption it reads (docs/performance.md,
 * "Issue 46 item 4 (h48b)").
 */
export const decodePermissionContext = (context: Hex): ReadonlyArray<ContextDelegation> => decodeAbiParameters(permissionContextParams, context)[0]

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
const accountCall = callDecoder(HybridDeleGator)
const entryPointCall = callDecoder(entryPoint07Abi)
const managerCall = callDecoder(DelegationManager)
const erc20Call = callDecoder(erc20Abi)
const entryPointLog = eventDecoder(entryPoint07Abi)
const erc20Log = eventDecoder(erc20Abi)
const SINGLE = 0x00
const BATCH = 0x01

/** The calls inside an account's `execute` (HybridDeleGator: one call, or an ERC-7579 single/batch); `[]` otherwise. */
export const accountCalls = (data: Hex): ReadonlyArray<Execution> => {
  try {
    const decoded = accountCall(data)
    if (decoded?.functionName !== "execute") return []
    const args = decoded.args as ReadonlyArray<unknown>
    if (args.length === 1) {
      const e = args[0] as { target: Address; value: bigint; callData: Hex }
      return [{ target: e.target, value: e.value, callData: e.callData }]
    }
    const [mode, executionCalldata] = args as [Hex, Hex]
    return executionsOf(mode, executionCalldata)
  } catch {
    return []
  }
}

/** The executions an ERC-7579 mode and execution calldata carry (single or batch, default or try). */
export const executionsOf = (mode: Hex, executionCalldata: Hex): ReadonlyArray<Execution> => {
  const callType = parseInt(mode.slice(2, 4), 16)
  if (callType === SINGLE) {
    return [{
      target: slice(executionCalldata, 0, 20),
      value: BigInt(slice(executionCalldata, 20, 52)),
      callData: executionCalldata.length > 106 ? slice(executionCalldata, 52) : "0x"
    }]
  }
  if (callType === BATCH) {
    const [batch] = decodeAbiParameters(
      [{ type: "tuple[]", components: [{ name: "target", type: "address" }, { name: "value", type: "uint256" }, { name: "callData", type: "bytes" }] }],
      executionCalldata
    )
    return batch.map((e) => ({ target: e.target, value: e.value, callData: e.callData }))
  }
  return []
}

const entryPointEvent = (log: RawLog) => {
  try {
    return entryPointLog(log)
  } catch {
    return undefined
  }
}

/** Every call to `redeemDelegations` the transaction made, with its sender and the logs it may have emitted. */
const dmCalls = (tx: TransactionInput, receipt: ReceiptInput, addresses: { readonly delegationManager: Address; readonly entryPoint: Address }): ReadonlyArray<DmCall> => {
  const all = { after: -1, before: Number.MAX_SAFE_INTEGER }
  if (tx.to === null) return []
  const toDm = (calls: ReadonlyArray<Execution>) => calls.filter((c) => same(c.target, addresses.delegationManager))
  if (same(tx.to, addresses.delegationManager)) return [{ sender: lower(tx.from), data: tx.input, via: "transaction", window: all }]
  if (same(tx.to, addresses.entryPoint)) {
    let ops: ReadonlyArray<{ sender: Address; nonce: bigint; callData: Hex }>
    try {
      const decoded = entryPointCall(tx.input)
      if (decoded?.functionName !== "handleOps") return []
      ops = (decoded.args as unknown as [ReadonlyArray<{ sender: Address; nonce: bigint; callData: Hex }>])[0]
    } catch {
      return []
    }
    // Each operation's execution emitted the logs after the previous boundary and before its own event.
    const out: Array<DmCall> = []
    let boundary = -1
    for (const log of receipt.logs) {
      if (!same(log.address, addresses.entryPoint)) continue
      const ev = entryPointEvent(log)
      if (ev?.eventName === "BeforeExecution") boundary = log.logIndex ?? 0
      if (ev?.eventName !== "UserOperationEvent") continue
      const args = ev.args as { userOpHash: Hash; sender: Address; nonce: bigint; success: boolean }
      const here = log.logIndex ?? 0
      const op = ops.find((o) => same(o.sender, args.sender) && o.nonce === args.nonce)
      if (op !== undefined && args.success) {
        for (const call of toDm(accountCalls(op.callData))) {
          out.push({ sender: lower(op.sender), data: call.callData, via: "user_operation", userOpHash: lower(args.userOpHash), window: { after: boundary, before: here } })
        }
      }
      boundary = here
    }
    return out
  }
  // An account's own `execute`, called by its owner: the account is the redeemer.
  return toDm(accountCalls(tx.input)).map((call) => ({ sender: lower(tx.to!), data: call.callData, via: "account_execute" as const, window: all }))
}

interface TransferLog {
  readonly token: Address
  readonly from: Address
  readonly to: Address
  readonly units: bigint
  readonly logIndex: number
}

const transfersIn = (logs: ReadonlyArray<RawLog>, window: DmCall["window"]): Array<TransferLog> => {
  const out: Array<TransferLog> = []
  for (const log of logs) {
    const index = log.logIndex ?? 0
    if (index <= window.after || index >= window.before || log.topics.length !== 3) continue
    try {
      const ev = erc20Log(log)
      if (ev?.eventName !== "Transfer") continue
      const args = ev.args as { from: Address; to: Address; value: bigint }
      out.push({ token: lower(log.address), from: lower(args.from), to: lower(args.to), units: args.value, logIndex: index })
    } catch {
      // not a Transfer
    }
  }
  return out
}

/** An execution's ERC-20 `transfer(to, amount)`, if it is one. */
const transferOf = (e: Execution) => {
  try {
    const d = erc20Call(e.callData)
    if (d?.functionName !== "transfer") return undefined
    const [to, units] = d.args as [Address, bigint]
    return { token: lower(e.target), to: lower(to), units }
  } catch {
    return undefined
  }
}

/** Every permission context `tx` redeemed (see the module's comment); `[]` for a reverted transaction. */
export const redeemedContexts = (
  tx: TransactionInput,
  receipt: ReceiptInput,
  addresses: { readonly delegationManager: Address; readonly entryPoint: Address }
): ReadonlyArray<RedeemedContext> => {
  if (receipt.status !== "success") return []
  const events = redemptionsIn(addresses.delegationManager, receipt.logs)
  const out: Array<RedeemedContext> = []
  for (const call of dmCalls(tx, receipt, addresses)) {
    let args: readonly [ReadonlyArray<Hex>, ReadonlyArray<Hex>, ReadonlyArray<Hex>]
    try {
      const decoded = managerCall(call.data)
      if (decoded?.functionName !== "redeemDelegations") continue
      args = decoded.args as unknown as typeof args
    } catch {
      continue
    }
    const [contexts, modes, executionCalldatas] = args
    const transfers = transfersIn(receipt.logs, call.window)
    const used = new Set<number>()
    const fromCall: Array<RedeemedContext> = []
    for (const [i, context] of contexts.entries()) {
      let delegations: ReadonlyArray<ContextDelegation>
      try {
        delegations = decodePermissionContext(context)
      } catch {
        continue
      }
      // An empty context is the caller acting as itself: no delegation was redeemed.
      if (delegations.length === 0) continue
      const chain = delegations.map((d) => ({ hash: delegationHashOf(d), delegator: lower(d.delegator), delegate: lower(d.delegate) }))
      const root = chain[chain.length - 1]!
      const event = events.find((e) =>
        e.delegationHash === root.hash && same(e.redeemer, call.sender) && e.logIndex > call.window.after && e.logIndex < call.window.before &&
        !out.some((o) => o.logIndex === e.logIndex) && !fromCall.some((o) => o.logIndex === e.logIndex)
      )
      if (event === undefined) continue
      const executions = executionsOf(modes[i]!, executionCalldatas[i]!)
      const moved: Array<Moved> = []
      for (const e of executions) {
        if (e.value > 0n) moved.push({ token: NATIVE_ADDRESS, to: lower(e.target), units: e.value })
        const t = transferOf(e)
        if (t === undefined) continue
        const log = transfers.find((l) => !used.has(l.logIndex) && l.token === t.token && l.from === root.delegator && l.to === t.to && l.units === t.units)
        if (log === undefined) continue
        used.add(log.logIndex)
        moved.push({ token: log.token, to: log.to, units: log.units, logIndex: log.logIndex })
      }
      fromCall.push({
        chain,
        leafCaveats: delegations[0]!.caveats.map((c) => ({ enforcer: lower(c.enforcer), terms: c.terms })),
        rootHash: root.hash,
        rootDelegator: root.delegator,
        redeemer: call.sender,
        via: call.via,
        ...(call.userOpHash === undefined ? {} : { userOpHash: call.userOpHash }),
        executions,
        moved,
        logIndex: event.logIndex
      })
    }
    // Transfers out of a root delegator that no transfer execution explains (an execution that is
    // not a plain transfer, under a grant this service did not build): its context's, not lost.
    for (const l of transfers) {
      if (used.has(l.logIndex)) continue
      const owner = fromCall.find((c) => c.rootDelegator === l.from && c.executions.some((e) => transferOf(e) === undefined && e.callData !== "0x"))
      if (owner !== undefined) (owner.moved as Array<Moved>).push({ token: l.token, to: l.to, units: l.units, logIndex: l.logIndex })
    }
    out.push(...fromCall)
  }
  return out
}
