/**
 * The DelegationManager's events of known delegations in a block range, as the chain shows
 * them: redemptions and disables. A redemption is decoded from its transaction's call data and
 * receipt (src/delegations/RedemptionChains.ts): the permission context's whole chain of
 * delegations, who redeemed it (`msg.sender` of `redeemDelegations`, the stranger at the end of
 * a chain as much as the delegate itself) and what moved; a root delegation of a managed account
 * that this service did not build is reported too (`delegationId` undefined). Each names the
 * operation that carried it when the relay knows that operation (then the relay's hooks did the
 * work: the owner's entry, the revoke).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type AbiEvent, type Address, type Hash, type Log, parseAbiItem, type PublicClient, type TransactionReceipt } from "viem"
import { inclusionOf } from "../chain/Inclusions.ts"
import type { PassReads } from "./PassReads.ts"
import { type ChainLink, type Moved, redeemedContexts, type RedeemedContext } from "./RedemptionChains.ts"
import { redemptionsIn, transfersOut } from "./Redemptions.ts"

const DELEGATION = "(address delegate, address delegator, bytes32 authority, (address enforcer, bytes terms, bytes args)[] caveats, uint256 salt, bytes signature)"
const REDEEMED = parseAbiItem(`event RedeemedDelegation(address indexed rootDelegator, address indexed redeemer, ${DELEGATION} delegation)`)
const DISABLED = parseAbiItem(
  `event DisabledDelegation(bytes32 indexed delegationHash, address indexed delegator, address indexed delegate, ${DELEGATION} delegation)`
)

/** What the follower records of any event (chain_inclusions): where it is and whose it is. */
export interface ObservedEvent {
  readonly kind: "user_operation" | "redemption" | "disable"
  readonly blockHash: string
  readonly blockNumber: bigint
  readonly logIndex: number
  readonly txHash: string
  readonly userOpHash?: string
  readonly accountId: string
}

interface DelegationEvent extends Omit<ObservedEvent, "kind"> {
  readonly delegator: Address
  readonly txHash: Hash
  /** The relay's operation that carried it, if any. */
  readonly operationId: string | undefined
}

export interface ObservedRedemption extends DelegationEvent {
  /** The grant; `undefined` for a root delegation of the account that this service did not build. */
  readonly delegationId: string | undefined
  /** The grant's permission id (the root of the chain). */
  readonly rootHash: Hash
  /** The grant's delegate. */
  readonly delegate: Address
  /** `msg.sender` of `redeemDelegations`: the delegate, or whoever it passed the grant to. */
  readonly redeemer: Address
  /** The permission context, leaf first (one link when the delegate redeemed the grant itself). */
  readonly chain: ReadonlyArray<ChainLink>
  /** The leaf's signed caveats, when the call data was read (RedemptionChains.ts). */
  readonly leafCaveats?: RedeemedContext["leafCaveats"]
  /** What left the delegator: matched `Transfer`s and native value (RedemptionChains.ts). */
  readonly moved: ReadonlyArray<Moved>
  readonly via: RedeemedContext["via"] | "unknown"
  readonly redeemerUserOpHash?: Hash
}

export interface ObservedDisable extends DelegationEvent {
  readonly delegationId: string
  readonly permissionId: string
}

export interface BlockRange {
  readonly client: PublicClient
  readonly sql: SqlClient.SqlClient
  readonly chainId: number
  readonly delegationManager: Address
  readonly entryPoint: Address
  readonly from: bigint
  readonly to: bigint
  /** The pass's chain reads: the plan makes them, the transaction finds them kept (PassReads.ts). */
  readonly reads: PassReads
}

/**
 * Each event of `event` in the range whose delegation is known, with its transaction's logs
 * (one receipt per transaction) and the relay's operation that carried it.
 */
const knownEvents = <E extends AbiEvent, K extends { readonly account_id: string }>(
  range: BlockRange,
  event: E,
  known: (log: Log) => Effect.Effect<K | undefined, unknown>
) =>
  Effect.gen(function*() {
    const { client, reads, sql } = range
    const events = yield* Effect.tryPromise(() =>
      reads.memo(
        `logs:${event.name}:${range.from}:${range.to}`,
        () => client.getLogs({ address: range.delegationManager, event: event as AbiEvent, fromBlock: range.from, toBlock: range.to })
      )
    )
    const receipts = new Map<string, TransactionReceipt>()
    const out: Array<{ log: Log; delegation: K; logs: ReadonlyArray<Log>; receipt: TransactionReceipt; operationId: string | undefined }> = []
    for (const log of events as ReadonlyArray<Log>) {
      if (log.removed) continue
      const delegation = yield* known(log)
      if (delegation === undefined) continue
      const tx = log.transactionHash!
      let receipt = receipts.get(tx)
      if (receipt === undefined) {
        receipt = yield* Effect.tryPromise(() => reads.receipt(tx))
        receipts.set(tx, receipt)
      }
      const logs = receipt.logs
      // The operation that carried it: the first UserOperationEvent after it in the bundle.
      const all = logs
      const carrier = all
        .filter((l) => (l.logIndex ?? 0) > (log.logIndex ?? 0))
        .map((l) => inclusionOf(range.entryPoint, l, all))
        .find((i) => i !== undefined)
      const ops = carrier === undefined ? [] : yield* sql<{ id: string }>`
        SELECT id FROM user_operations WHERE chain_id = ${range.chainId} AND user_op_hash = ${carrier.userOpHash.toLowerCase()}
        ORDER BY (status = 'included') DESC, submitted_at DESC LIMIT 1`
      out.push({ log, delegation, logs, receipt, operationId: ops[0]?.id })
    }
    return out
  })

const located = (log: Log) => ({
  txHash: log.transactionHash!.toLowerCase() as Hash,
  blockHash: log.blockHash!.toLowerCase(),
  blockNumber: log.blockNumber!,
  logIndex: log.logIndex ?? 0
})

const ROOT_AUTHORITY = `0x${"f".repeat(64)}`

export const redemptionsOf = (range: BlockRange) =>
  Effect.gen(function*() {
    const found = yield* knownEvents(range, REDEEMED, (log) =>
      Effect.gen(function*() {
        const [r] = redemptionsIn(range.delegationManager, [log])
        if (r === undefined) return undefined
        const hash = r.delegationHash.toLowerCase()
        const rows = yield* range.sql<{ id: string; account_id: string }>`
          SELECT d.id, d.account_id FROM delegations d
          WHERE d.chain_id = ${range.chainId} AND lower(d.permission_id) = ${hash}`
        if (rows[0] !== undefined) return { id: rows[0].id as string | undefined, account_id: rows[0].account_id }
        // A grant this service did not build: the root of a chain, from a managed account, neither
        // one of its grants' legs nor a marketplace mandate.
        if (r.authority.toLowerCase() !== ROOT_AUTHORITY) return undefined
        const accounts = yield* range.sql<{ id: string }>`
          SELECT a.id FROM accounts a WHERE a.chain_id = ${range.chainId} AND a.address = ${r.rootDelegator.toLowerCase()}
            AND NOT EXISTS (SELECT 1 FROM delegation_legs l WHERE lower(l.permission_id) = ${hash})
            AND NOT EXISTS (SELECT 1 FROM marketplace_mandates m WHERE lower(m.mandate_id) = ${hash})`
        return accounts[0] === undefined ? undefined : { id: undefined, account_id: accounts[0].id }
      }))
    // Each transaction's call data says which contexts it redeemed, and by whom.
    const decoded = new Map<string, ReadonlyArray<RedeemedContext>>()
    const out: Array<ObservedRedemption> = []
    for (const { delegation, log, logs, receipt, operationId } of found) {
      const r = redemptionsIn(range.delegationManager, [log])[0]!
      const tx = log.transactionHash!.toLowerCase()
      let contexts = decoded.get(tx)
      if (contexts === undefined) {
        const t = yield* Effect.tryPromise(() => range.reads.transaction(tx as Hash))
        contexts = redeemedContexts(
          { from: t.from, to: t.to, input: t.input },
          { status: receipt.status, logs: receipt.logs },
          { delegationManager: range.delegationManager, entryPoint: range.entryPoint }
        )
        decoded.set(tx, contexts)
      }
      const context = contexts.find((c) => c.logIndex === r.logIndex)
      const common = {
        ...located(log),
        accountId: delegation.account_id,
        delegationId: delegation.id,
        rootHash: r.delegationHash.toLowerCase() as Hash,
        delegator: r.rootDelegator,
        delegate: r.delegate,
        redeemer: r.redeemer.toLowerCase() as Address,
        operationId
      }
      if (context !== undefined) {
        out.push({
          ...common,
          chain: context.chain,
          leafCaveats: context.leafCaveats,
          moved: context.moved,
          via: context.via,
          ...(context.userOpHash === undefined ? {} : { redeemerUserOpHash: context.userOpHash })
        })
        continue
      }
      // Call data this decoder does not read (a contract between the redeemer and the
      // DelegationManager): the event's own facts, and the transfers out of the delegator since
      // the previous boundary of the transaction.
      const before = logs.filter((l) => (l.logIndex ?? 0) < r.logIndex)
      const boundaries = [
        ...redemptionsIn(range.delegationManager, before).map((b) => b.logIndex),
        ...before.filter((l) => inclusionOf(range.entryPoint, l, logs) !== undefined).map((l) => l.logIndex ?? 0)
      ]
      const after = boundaries.length === 0 ? -1 : Math.max(...boundaries)
      out.push({
        ...common,
        chain: [{ hash: common.rootHash, delegator: r.rootDelegator.toLowerCase() as Address, delegate: r.delegate.toLowerCase() as Address }],
        moved: transfersOut(logs, r.rootDelegator, { after, before: r.logIndex }),
        via: "unknown"
      })
    }
    return out
  })

/** `DisabledDelegation`s of known delegations in a block range. */
export const disablesOf = (range: BlockRange) =>
  Effect.gen(function*() {
    const hashOf = (log: Log) => `0x${(log.topics[1] ?? "").slice(2)}`.toLowerCase()
    const delegatorOf = (log: Log) => `0x${(log.topics[2] ?? "").slice(26)}` as Address
    const found = yield* knownEvents(range, DISABLED, (log) =>
      range.sql<{ id: string; account_id: string }>`
        SELECT d.id, d.account_id FROM delegation_legs l JOIN delegations d ON d.id = l.delegation_id
        WHERE d.chain_id = ${range.chainId} AND lower(l.permission_id) = ${hashOf(log)}`.pipe(Effect.map((rows) => rows[0])))
    return found.map(({ delegation, log, operationId }): ObservedDisable => ({
      ...located(log),
      accountId: delegation.account_id,
      delegationId: delegation.id,
      permissionId: hashOf(log),
      delegator: delegatorOf(log),
      operationId
    }))
  })
