/**
 * Redemptions of known delegations in a block range, as the chain shows them: who redeemed
 * which delegation of which managed account, what left the delegator (ERC-20 `Transfer`s
 * between the previous boundary and the event), and the operation that carried it when
 * the relay knows that operation (then the relay's hooks wrote the owner's entry).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type Address, type Hash, type Log, parseAbiItem, type PublicClient } from "viem"
import { inclusionOf } from "../chain/Inclusions.ts"
import { redemptionsIn, type TransferOut, transfersOut } from "../delegations/Redemptions.ts"

const REDEEMED = parseAbiItem(
  "event RedeemedDelegation(address indexed rootDelegator, address indexed redeemer, (address delegate, address delegator, bytes32 authority, (address enforcer, bytes terms, bytes args)[] caveats, uint256 salt, bytes signature) delegation)"
)

export interface ObservedRedemption {
  readonly accountId: string
  readonly delegationId: string
  readonly delegator: Address
  readonly delegate: Address
  readonly txHash: Hash
  readonly blockHash: string
  readonly blockNumber: bigint
  readonly logIndex: number
  readonly transfers: ReadonlyArray<TransferOut>
  /** The relay's operation that carried it (its owner entry is `delegated:<id>`), if any. */
  readonly operationId: string | undefined
}

export const redemptionsOf = (input: {
  readonly client: PublicClient
  readonly sql: SqlClient.SqlClient
  readonly chainId: number
  readonly delegationManager: Address
  readonly entryPoint: Address
  readonly from: bigint
  readonly to: bigint
}) =>
  Effect.gen(function*() {
    const { client, sql } = input
    const events = yield* Effect.tryPromise(() =>
      client.getLogs({ address: input.delegationManager, event: REDEEMED, fromBlock: input.from, toBlock: input.to })
    )
    const out: Array<ObservedRedemption> = []
    const receipts = new Map<string, ReadonlyArray<Log>>()
    for (const event of events) {
      if (event.removed) continue
      const [r] = redemptionsIn(input.delegationManager, [event as unknown as Log & { address: Address }])
      if (r === undefined) continue
      const known = yield* sql<{ id: string; account_id: string }>`
        SELECT d.id, d.account_id FROM delegations d
        WHERE d.chain_id = ${input.chainId} AND lower(d.permission_id) = ${r.delegationHash.toLowerCase()}`
      if (known[0] === undefined) continue
      const tx = event.transactionHash!
      let logs = receipts.get(tx)
      if (logs === undefined) {
        logs = (yield* Effect.tryPromise(() => client.getTransactionReceipt({ hash: tx }))).logs
        receipts.set(tx, logs)
      }
      // The boundary before it: the previous redemption or operation in the same transaction.
      const before = logs.filter((l) => (l.logIndex ?? 0) < r.logIndex)
      const boundaries = [
        ...redemptionsIn(input.delegationManager, before).map((b) => b.logIndex),
        ...before.filter((l) => inclusionOf(input.entryPoint, l, logs!) !== undefined).map((l) => l.logIndex ?? 0)
      ]
      const after = boundaries.length === 0 ? -1 : Math.max(...boundaries)
      const carrier = logs
        .filter((l) => (l.logIndex ?? 0) > r.logIndex)
        .map((l) => inclusionOf(input.entryPoint, l, logs!))
        .find((i) => i !== undefined)
      const ops = carrier === undefined ? [] : yield* sql<{ id: string }>`
        SELECT id FROM user_operations WHERE chain_id = ${input.chainId} AND user_op_hash = ${carrier.userOpHash.toLowerCase()}
        ORDER BY (status = 'included') DESC, submitted_at DESC LIMIT 1`
      out.push({
        accountId: known[0].account_id,
        delegationId: known[0].id,
        delegator: r.rootDelegator,
        delegate: r.delegate,
        txHash: tx.toLowerCase() as Hash,
        blockHash: event.blockHash!.toLowerCase(),
        blockNumber: event.blockNumber!,
        logIndex: r.logIndex,
        transfers: transfersOut(logs, r.rootDelegator, { after, before: r.logIndex }),
        operationId: ops[0]?.id
      })
    }
    return out
  })

const DISABLED = parseAbiItem(
  "event DisabledDelegation(bytes32 indexed delegationHash, address indexed delegator, address indexed delegate, (address delegate, address delegator, bytes32 authority, (address enforcer, bytes terms, bytes args)[] caveats, uint256 salt, bytes signature) delegation)"
)

export interface ObservedDisable {
  readonly accountId: string
  readonly delegationId: string
  readonly permissionId: string
  readonly delegator: Address
  readonly txHash: Hash
  readonly blockHash: string
  readonly blockNumber: bigint
  readonly logIndex: number
  /** The relay's operation that carried it (a revoke or a freeze: its hooks did the work), if any. */
  readonly operationId: string | undefined
}

/** `DisabledDelegation`s of known delegations in a block range. */
export const disablesOf = (input: {
  readonly client: PublicClient
  readonly sql: SqlClient.SqlClient
  readonly chainId: number
  readonly delegationManager: Address
  readonly entryPoint: Address
  readonly from: bigint
  readonly to: bigint
}) =>
  Effect.gen(function*() {
    const { client, sql } = input
    const events = yield* Effect.tryPromise(() =>
      client.getLogs({ address: input.delegationManager, event: DISABLED, fromBlock: input.from, toBlock: input.to })
    )
    const out: Array<ObservedDisable> = []
    for (const event of events) {
      if (event.removed) continue
      const hash = (event.args.delegationHash ?? "").toLowerCase()
      const known = yield* sql<{ id: string; account_id: string }>`
        SELECT d.id, d.account_id FROM delegation_legs l JOIN delegations d ON d.id = l.delegation_id
        WHERE d.chain_id = ${input.chainId} AND lower(l.permission_id) = ${hash}`
      if (known[0] === undefined) continue
      const logs = (yield* Effect.tryPromise(() => client.getTransactionReceipt({ hash: event.transactionHash! }))).logs
      const carrier = logs
        .filter((l) => (l.logIndex ?? 0) > (event.logIndex ?? 0))
        .map((l) => inclusionOf(input.entryPoint, l, logs))
        .find((i) => i !== undefined)
      const ops = carrier === undefined ? [] : yield* sql<{ id: string }>`
        SELECT id FROM user_operations WHERE chain_id = ${input.chainId} AND user_op_hash = ${carrier.userOpHash.toLowerCase()} LIMIT 1`
      out.push({
        accountId: known[0].account_id,
        delegationId: known[0].id,
        permissionId: hash,
        delegator: event.args.delegator!,
        txHash: event.transactionHash!.toLowerCase() as Hash,
        blockHash: event.blockHash!.toLowerCase(),
        blockNumber: event.blockNumber!,
        logIndex: event.logIndex ?? 0,
        operationId: ops[0]?.id
      })
    }
    return out
  })
