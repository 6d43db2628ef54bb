/**
 * What the chain shows about user operations, read without any bundler: the EntryPoint's
 * `UserOperationEvent`s (one per included operation, executed or reverted), the revert
 * reason it logged, and the logs the operation's own execution emitted. The follower
 * (ChainFollower.ts) and the relay's refusal check read operations through this module,
 * so a lost or refused bundler answer is never the last word on an operation.
 */
import { decodeEventLog, decodeFunctionData, type Address, type Hash, type Hex, type Log, type PublicClient, parseAbiItem } from "viem"
import { entryPoint07Abi } from "viem/account-abstraction"
import type { UserOpLog, UserOpReceipt } from "./Bundler.ts"
import { decodeRevert } from "./RevertReasons.ts"

export const USER_OPERATION_EVENT = parseAbiItem(
  "event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)"
)

/** One included operation as the chain shows it. */
export interface Inclusion {
  readonly userOpHash: Hash
  readonly sender: Address
  readonly nonce: bigint
  readonly success: boolean
  readonly transactionHash: Hash
  readonly blockNumber: bigint
  readonly blockHash: Hash
  readonly logIndex: number
  readonly receipt: UserOpReceipt
}

interface EventArgs {
  readonly userOpHash: Hash
  readonly sender: Address
  readonly paymaster: Address
  readonly nonce: bigint
  readonly success: boolean
  readonly actualGasCost: bigint
  readonly actualGasUsed: bigint
}

const ZERO = "0x0000000000000000000000000000000000000000"

const decodeOnce = (log: Pick<Log, "topics" | "data">) => {
  try {
    return decodeEventLog({ abi: entryPoint07Abi, topics: log.topics as [Hex, ...Array<Hex>], data: log.data })
  } catch {
    return undefined
  }
}

/**
 * Each log decoded once: `inclusionOf` walks a bundle's logs once per operation in it, so a
 * bundle of n operations would decode its logs n times (the follower's CPU, docs/performance.md).
 */
const decoded = new WeakMap<object, ReturnType<typeof decodeOnce> | null>()
const decodeEntryPoint = (log: Pick<Log, "topics" | "data">) => {
  const kept = decoded.get(log)
  if (kept !== undefined) return kept ?? undefined
  const d = decodeOnce(log)
  decoded.set(log, d ?? null)
  return d
}

/**
 * The operation's receipt from its transaction's logs: the logs between the previous
 * operation's `UserOperationEvent` (or the bundle's `BeforeExecution`) and its own are
 * what its execution emitted, as the EntryPoint runs operations one after another.
 */
export const inclusionOf = (
  entryPoint: Address,
  event: Log,
  txLogs: ReadonlyArray<Log>
): Inclusion | undefined => {
  const decoded = decodeEntryPoint(event)
  if (decoded?.eventName !== "UserOperationEvent") return undefined
  const args = decoded.args as unknown as EventArgs
  const ep = entryPoint.toLowerCase()
  const at = event.logIndex ?? 0
  let start = -1
  let revertData: Hex | undefined
  for (const log of txLogs) {
    const index = log.logIndex ?? 0
    if (index >= at || log.address.toLowerCase() !== ep) continue
    const ev = decodeEntryPoint(log)
    if (ev === undefined) continue
    if (ev.eventName === "UserOperationEvent" || ev.eventName === "BeforeExecution") start = Math.max(start, index)
  }
  const logs: Array<UserOpLog> = []
  for (const log of txLogs) {
    const index = log.logIndex ?? 0
    if (index <= start || index >= at) continue
    if (log.address.toLowerCase() === ep) {
      const ev = decodeEntryPoint(log)
      if (ev?.eventName === "UserOperationRevertReason") {
        const r = ev.args as unknown as { userOpHash: Hash; revertReason: Hex }
        if (r.userOpHash.toLowerCase() === args.userOpHash.toLowerCase()) revertData = r.revertReason
        continue
      }
    }
    logs.push({ address: log.address, topics: log.topics, data: log.data })
  }
  const reason = revertData === undefined || revertData === "0x" ? undefined : (decodeRevert(revertData) ?? revertData)
  const receipt: UserOpReceipt = {
    userOpHash: args.userOpHash,
    sender: args.sender,
    nonce: args.nonce,
    success: args.success,
    ...(args.success ? {} : { ...(reason === undefined ? {} : { reason }), ...(revertData === undefined ? {} : { revertData }) }),
    actualGasCost: args.actualGasCost,
    actualGasUsed: args.actualGasUsed,
    ...(args.paymaster.toLowerCase() === ZERO ? {} : { paymaster: args.paymaster }),
    transactionHash: event.transactionHash!,
    blockNumber: event.blockNumber!,
    blockHash: event.blockHash!,
    logs
  }
  return {
    userOpHash: args.userOpHash,
    sender: args.sender,
    nonce: args.nonce,
    success: args.success,
    transactionHash: event.transactionHash!,
    blockNumber: event.blockNumber!,
    blockHash: event.blockHash!,
    logIndex: at,
    receipt
  }
}

/** The EntryPoint's `UserOperationEvent` logs in a block range (optionally of one operation). */
export const userOperationEvents = (
  client: PublicClient,
  entryPoint: Address,
  fromBlock: bigint,
  toBlock: bigint,
  filter?: { readonly userOpHash?: Hash }
): Promise<ReadonlyArray<Log>> =>
  client.getLogs({
    address: entryPoint,
    event: USER_OPERATION_EVENT,
    ...(filter?.userOpHash === undefined ? {} : { args: { userOpHash: filter.userOpHash } }),
    fromBlock,
    toBlock
  }).then((logs) => logs.filter((l) => !l.removed) as ReadonlyArray<Log>)

/**
 * The EntryPoint's `UserOperationEvent` logs of one block, named by its hash (EIP-234): a
 * node that does not have that block fails rather than answering nothing.
 */
export const userOperationEventsAt = (client: PublicClient, entryPoint: Address, blockHash: Hash): Promise<ReadonlyArray<Log>> =>
  client.getLogs({ address: entryPoint, event: USER_OPERATION_EVENT, blockHash }).then((logs) =>
    logs.filter((l) => !l.removed) as ReadonlyArray<Log>
  )

/** The sender a `UserOperationEvent` log names (its second topic), lowercase. */
export const senderOfEvent = (log: Log): string => `0x${(log.topics[2] ?? "").slice(26)}`.toLowerCase()

/** How a transaction's receipt is read: from the node, or from what a caller already read (the follower's pass). */
export type ReceiptOf = (hash: Hash) => Promise<{ readonly logs: ReadonlyArray<Log> }>

/** The node's receipt of a transaction. */
export const receiptFrom = (client: PublicClient): ReceiptOf => (hash) => client.getTransactionReceipt({ hash })

/**
 * Each event's operation with its receipt: one `eth_getTransactionReceipt` per bundle.
 * Pick the events first (a public chain's bundles are mostly other people's).
 */
export const inclusionsOfEvents = async (
  receiptOf: ReceiptOf,
  entryPoint: Address,
  events: ReadonlyArray<Log>
): Promise<ReadonlyArray<Inclusion>> => {
  const receipts = new Map<Hash, ReadonlyArray<Log>>()
  const out: Array<Inclusion> = []
  for (const event of events) {
    const tx = event.transactionHash!
    let logs = receipts.get(tx)
    if (logs === undefined) {
      logs = (await receiptOf(tx)).logs
      receipts.set(tx, logs)
    }
    const inclusion = inclusionOf(entryPoint, event, logs)
    if (inclusion !== undefined) out.push(inclusion)
  }
  return out
}

/** Every `UserOperationEvent` in a block range, with each operation's receipt. */
export const inclusionsIn = async (
  client: PublicClient,
  entryPoint: Address,
  fromBlock: bigint,
  toBlock: bigint,
  filter?: { readonly userOpHash?: Hash }
): Promise<ReadonlyArray<Inclusion>> =>
  inclusionsOfEvents(receiptFrom(client), entryPoint, await userOperationEvents(client, entryPoint, fromBlock, toBlock, filter))

/** The operation's inclusion on chain, searched over the last `lookback` blocks; undefined when not found. */
export const findInclusion = async (
  client: PublicClient,
  entryPoint: Address,
  userOpHash: Hash,
  lookback: bigint
): Promise<Inclusion | undefined> => {
  // Uncached: viem keeps a block number for its polling interval (4 s), and a stale head
  // would hide an operation mined since, whose used nonce the caller may already have read.
  const head = await client.getBlockNumber({ cacheTime: 0 })
  const from = head > lookback ? head - lookback : 0n
  const found = await inclusionsIn(client, entryPoint, from, head, { userOpHash })
  return found.at(-1)
}

/** The next nonce the EntryPoint accepts for `sender` under the nonce's key (its upper 192 bits). */
export const nextNonce = (client: PublicClient, entryPoint: Address, sender: Address, nonce: bigint) =>
  client.readContract({
    address: entryPoint,
    abi: entryPoint07Abi,
    functionName: "getNonce",
    args: [sender, nonce >> 64n]
  })

/** How a transaction is read: from the node, or from what a caller already read (the follower's pass). */
export type TransactionOf = (hash: Hash) => Promise<{ readonly to: Address | null; readonly input: Hex }>

/** The node's transaction. */
export const transactionFrom = (client: PublicClient): TransactionOf => (hash) => client.getTransaction({ hash })

/**
 * The signature the operation was included with, read from its bundle transaction when it
 * is a plain `handleOps` call (undefined otherwise: the operation is known by its hash).
 */
export const signatureOnChain = async (transactionOf: TransactionOf, entryPoint: Address, inclusion: Inclusion): Promise<Hex | undefined> => {
  try {
    const tx = await transactionOf(inclusion.transactionHash)
    if (tx.to?.toLowerCase() !== entryPoint.toLowerCase()) return undefined
    const call = decodeFunctionData({ abi: entryPoint07Abi, data: tx.input })
    if (call.functionName !== "handleOps") return undefined
    const ops = call.args[0] as ReadonlyArray<{ sender: Address; nonce: bigint; signature: Hex }>
    return ops.find((o) => o.sender.toLowerCase() === inclusion.sender.toLowerCase() && o.nonce === inclusion.nonce)?.signature
  } catch {
    return undefined
  }
}
