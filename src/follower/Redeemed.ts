/**
 * The DelegationManager's events of known delegations in a block range, as the chain shows
 * them: redemptions (who redeemed which delegation of which managed account, and what left
 * the delegator: the ERC-20 `Transfer`s between the previous boundary and the event) and
 * disables. Each names the operation that carried it when the relay knows that operation
 * (then the relay's hooks did the work: the owner's entry, the revoke).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type AbiEvent, type Address, type Hash, type Log, parseAbiItem, type PublicClient } from "viem"
import { inclusionOf } from "../chain/Inclusions.ts"
import { redemptionsIn, type TransferOut, transfersOut } from "../delegations/Redemptions.ts"

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
  readonly delegationId: string
  readonly delegator: Address
  readonly txHash: Hash
  /** The relay's operation that carried it, if any. */
  readonly operationId: string | undefined
}

export interface ObservedRedemption extends DelegationEvent {
  readonly delegate: Address
  readonly transfers: ReadonlyArray<TransferOut>
}

export interface ObservedDisable extends DelegationEvent {
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
}

/**
 * Each event of `event` in the range whose delegation is known, with its transaction's logs
 * (one receipt per transaction) and the relay's operation that carried it.
 */
const knownEvents = <E extends AbiEvent>(
  range: BlockRange,
  event: E,
  known: (log: Log) => Effect.Effect<{ readonly id: string; readonly account_id: string } | undefined, unknown>
) =>
  Effect.gen(function*() {
    const { client, sql } = range
    const events = yield* Effect.tryPromise(() =>
      client.getLogs({ address: range.delegationManager, event: event as AbiEvent, fromBlock: range.from, toBlock: range.to })
    )
    const receipts = new Map<string, ReadonlyArray<Log>>()
    const out: Array<{ log: Log; delegation: { id: string; account_id: string }; logs: ReadonlyArray<Log>; operationId: string | undefined }> = []
    for (const log of events as ReadonlyArray<Log>) {
      if (log.removed) continue
      const delegation = yield* known(log)
      if (delegation === undefined) continue
      const tx = log.transactionHash!
      let logs = receipts.get(tx)
      if (logs === undefined) {
        logs = (yield* Effect.tryPromise(() => client.getTransactionReceipt({ hash: tx }))).logs
        receipts.set(tx, logs)
      }
      // The operation that carried it: the first UserOperationEvent after it in the bundle.
      const all = logs
      const carrier = all
        .filter((l) => (l.logIndex ?? 0) > (log.logIndex ?? 0))
        .map((l) => inclusionOf(range.entryPoint, l, all))
        .find((i) => i !== undefined)
      const ops = carrier === undefined ? [] : yield* sql<{ id: string }>`
        SELECT id FROM user_operations WHERE chain_id = ${range.chainId} AND user_op_hash = ${carrier.userOpHash.toLowerCase()}
        ORDER BY (status = 'included') DESC, submitted_at DESC LIMIT 1`
      out.push({ log, delegation, logs, operationId: ops[0]?.id })
    }
    return out
  })

const located = (log: Log) => ({
  txHash: log.transactionHash!.toLowerCase() as Hash,
  blockHash: log.blockHash!.toLowerCase(),
  blockNumber: log.blockNumber!,
  logIndex: log.logIndex ?? 0
})

export const redemptionsOf = (range: BlockRange) =>
  Effect.gen(function*() {
    const found = yield* knownEvents(range, REDEEMED, (log) =>
      Effect.gen(function*() {
        const [r] = redemptionsIn(range.delegationManager, [log])
        if (r === undefined) return undefined
        const rows = yield* range.sql<{ id: string; account_id: string }>`
          SELECT d.id, d.account_id FROM delegations d
          WHERE d.chain_id = ${range.chainId} AND lower(d.permission_id) = ${r.delegationHash.toLowerCase()}`
        return rows[0]
      }))
    return found.map(({ delegation, log, logs, operationId }): ObservedRedemption => {
      const r = redemptionsIn(range.delegationManager, [log])[0]!
      // The boundary before it: the previous redemption or operation in the same transaction.
      const before = logs.filter((l) => (l.logIndex ?? 0) < r.logIndex)
      const boundaries = [
        ...redemptionsIn(range.delegationManager, before).map((b) => b.logIndex),
        ...before.filter((l) => inclusionOf(range.entryPoint, l, logs) !== undefined).map((l) => l.logIndex ?? 0)
      ]
      const after = boundaries.length === 0 ? -1 : Math.max(...boundaries)
      return {
        ...located(log),
        accountId: delegation.account_id,
        delegationId: delegation.id,
        delegator: r.rootDelegator,
        delegate: r.delegate,
        transfers: transfersOut(logs, r.rootDelegator, { after, before: r.logIndex }),
        operationId
      }
    })
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
