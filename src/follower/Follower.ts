/**
 * The chain follower (docs/follower.md): the source of truth for what executed.
 *
 * A pass reads the chain first, with no transaction open and nothing locked (its plan: the
 * head, the cursor's block, the range's events, receipts and transactions, kept in PassReads),
 * then writes what it read in one database transaction under an advisory lock (one follower at
 * a time across every service process on the database), which applies the plan only while the
 * cursor is still the one the plan was read from:
 * 1. read the cursor (last block read: number and hash); on the first run start at the
 *    head (or `FOLLOWER_START_BLOCK`);
 * 2. if the cursor's block is no longer on the chain (a reorg), walk back over the stored
 *    block hashes to the last block the chain still has; every inclusion recorded above
 *    it left the chain: its operation is `submitted` again and a compensating `reorged`
 *    entry follows its entry (never rewritten); a redemption's features undo what they
 *    recorded for it (RedemptionHooks `unwound`: an x402 payment is unsettled, its budget held again);
 * 3. read the next blocks (up to `FOLLOWER_BATCH_BLOCKS`, never past head −
 *    `FOLLOWER_CONFIRMATIONS`): the EntryPoint's `UserOperationEvent`s of managed
 *    accounts and the DelegationManager's `RedeemedDelegation`s of known delegations;
 *    each is recorded once (keyed by block hash and log index):
 *    - an operation of ours is settled from the chain (or corrected, or adopted when it
 *      was built here and sent around the relay: Relay.observe);
 *    - an operation nobody built here gets an entry of its own (`onchain_unrelayed`);
 *    - a redemption around the relay gets the owner's entry (OwnerLog.ts's rules);
 * 4. an operation the relay settled from a bundler's receipt in a block just read, which
 *    that block does not hold, left the chain before the follower saw it: reopened and
 *    compensated as in 2;
 * 5. move the cursor.
 */
import { Config, Context, Duration, Effect, Layer, Option, Schema } from "effect"
import { BlockNotFoundError, type Log } from "viem"
import { SqlClient } from "effect/sql"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { type Inclusion, inclusionsOfEvents, senderOfEvent, userOperationEvents } from "../chain/Inclusions.ts"
import { retryLockConflicts } from "../db/Conflicts.ts"
import { runLoop } from "../platform/Loop.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import { Relay } from "../userops/Relay.ts"
import { FollowerLog } from "./FollowerLog.ts"
import { makePassReads, type PassReads } from "./PassReads.ts"
import { RedemptionHooks, RedemptionHooksLive } from "./RedemptionHooks.ts"
import { disablesOf, type ObservedEvent, redemptionsOf } from "./Redeemed.ts"

export const FollowerConfig = Config.all({
  interval: Config.Duration("FOLLOWER_INTERVAL").pipe(Config.withDefault(Duration.seconds(2))),
  batchBlocks: Config.Int("FOLLOWER_BATCH_BLOCKS").pipe(Config.withDefault(500)),
  confirmations: Config.Int("FOLLOWER_CONFIRMATIONS").pipe(Config.withDefault(0)),
  startBlock: Config.option(Config.Int("FOLLOWER_START_BLOCK")),
  /** Stored block hashes kept for finding a fork point. */
  keepBlocks: Config.Int("FOLLOWER_KEEP_BLOCKS").pipe(Config.withDefault(512))
})

export interface PassResult {
  /** Blocks read in this pass (0 when another process holds the follower, or nothing is new). */
  readonly blocks: number
  readonly operations: number
  readonly redemptions: number
  readonly reorged: number
  readonly cursor: bigint | undefined
}

export class ChainFollower extends Context.Service<ChainFollower, {
  /** One pass over every served chain, side by side (see the module's comment); the results summed. */
  readonly followOnce: Effect.Effect<PassResult>
  /** One pass over one chain. */
  followChain(chainId: number): Effect.Effect<PassResult>
}>()("das/follower/ChainFollower") {}

/** One follower at a time per chain: a pass holds this advisory lock (with the chain id) for its transaction. */
export const ADVISORY_KEY = 0x666f6c6c // "foll"
const CursorRow = Schema.Struct({ block_number: Schema.String, block_hash: Schema.String })
const NONE: PassResult = { blocks: 0, operations: 0, redemptions: 0, reorged: 0, cursor: undefined }

/** Each chain has its own follower: its own cursor, reorgs and advisory lock; a chain that is down stops only its own. */
const makeChainFollower = (net: ChainNetwork) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const relay = yield* Relay
    const follower = yield* FollowerLog
    const hooks = yield* RedemptionHooks
    const config = yield* FollowerConfig
    const { network, chainId } = net
    const client = net.chain.client
    // The follower's log, on this chain.
    const log = {
      entryOfOperation: (inclusion: Parameters<typeof follower.entryOfOperation>[1]) => follower.entryOfOperation(chainId, inclusion),
      foreignOperation: (accountId: string, inclusion: Parameters<typeof follower.foreignOperation>[2]) =>
        follower.foreignOperation(chainId, accountId, inclusion),
      redemption: (r: Parameters<typeof follower.redemption>[1]) => follower.redemption(chainId, r),
      disabled: (d: Parameters<typeof follower.disabled>[1]) => follower.disabled(chainId, d),
      compensate: (c: Parameters<typeof follower.compensate>[1]) => follower.compensate(chainId, c)
    }
    const rpc = <A>(f: () => Promise<A>) => Effect.tryPromise(f)

    const blockHash = (n: bigint) =>
      rpc(() => client.getBlock({ blockNumber: n })).pipe(
        Effect.map((b): string | undefined => b.hash?.toLowerCase()),
        // Past the chain's head (it got shorter): no such block. Any other failure (a node that did not
        // answer) fails the pass, retried next interval: read as "gone", it would be a false fork that
        // moves the cursor back by up to `keepBlocks`.
        Effect.catch((e) => e.cause instanceof BlockNotFoundError ? Effect.succeed(undefined) : Effect.fail(e))
      )

    const readCursor = sql`SELECT block_number::text, block_hash FROM chain_cursor WHERE chain_id = ${chainId}`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(CursorRow))),
      Effect.map((rows) => rows[0] === undefined ? undefined : { number: BigInt(rows[0].block_number), hash: rows[0].block_hash })
    )
    const writeCursor = (n: bigint, hash: string) =>
      sql`INSERT INTO chain_cursor (chain_id, block_number, block_hash) VALUES (${chainId}, ${n.toString()}, ${hash})
          ON CONFLICT (chain_id) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash,
            updated_at = now()`
    const remember = (n: bigint, hash: string) =>
      sql`INSERT INTO chain_blocks (chain_id, block_number, block_hash) VALUES (${chainId}, ${n.toString()}, ${hash})
          ON CONFLICT (chain_id, block_number) DO UPDATE SET block_hash = EXCLUDED.block_hash`

    /** The last stored block the chain still has (the fork point), newest first. */
    const forkPoint = (cursor: bigint) =>
      Effect.gen(function*() {
        const stored = yield* sql<{ block_number: string; block_hash: string }>`
          SELECT block_number::text, block_hash FROM chain_blocks
          WHERE chain_id = ${chainId} AND block_number < ${cursor.toString()}
          ORDER BY block_number DESC LIMIT ${config.keepBlocks}`
        for (const s of stored) {
          const n = BigInt(s.block_number)
          if ((yield* blockHash(n)) === s.block_hash) return { number: n, hash: s.block_hash }
        }
        // Nothing stored survived: go back as far as blocks are kept.
        const n = cursor > BigInt(config.keepBlocks) ? cursor - BigInt(config.keepBlocks) : 0n
        return { number: n, hash: (yield* blockHash(n)) ?? "" }
      })

    /** Inclusions above `fork` left the chain: compensated, their operations reopened. */
    const unwind = (fork: bigint) =>
      Effect.gen(function*() {
        const orphans = yield* sql<{ block_hash: string; log_index: number; tx_hash: string; kind: string; user_op_hash: string | null; account_id: string; audit_event_id: string | null }>`
          UPDATE chain_inclusions SET status = 'orphaned'
          WHERE chain_id = ${chainId} AND block_number > ${fork.toString()} AND status = 'live'
          RETURNING block_hash, log_index, tx_hash, kind, user_op_hash, account_id, audit_event_id`
        for (const o of orphans) {
          if (o.user_op_hash !== null) yield* relay.reopen(chainId, o.user_op_hash, o.tx_hash)
          // What a feature changed for the redemption (an x402 payment's settlement and its budget) follows the chain.
          if (o.kind === "redemption") yield* hooks.unwound(chainId, { blockHash: o.block_hash, logIndex: o.log_index, txHash: o.tx_hash })
          yield* log.compensate({ key: `reorg:${o.block_hash}:${o.log_index}`, accountId: o.account_id, entryId: o.audit_event_id, txHash: o.tx_hash })
        }
        yield* sql`DELETE FROM chain_blocks WHERE chain_id = ${chainId} AND block_number > ${fork.toString()}`
        return orphans.length
      })

    /** Operations settled from a bundler's receipt in blocks just read, which those blocks do not hold. */
    const vanished = (from: bigint, to: bigint) =>
      Effect.gen(function*() {
        const rows = yield* sql<{ user_op_hash: string; transaction_hash: string; account_id: string; audit_event_id: string | null; block_number: string }>`
          SELECT u.user_op_hash, u.transaction_hash, u.account_id, u.audit_event_id, u.block_number FROM user_operations u
          WHERE u.chain_id = ${chainId} AND u.transaction_hash IS NOT NULL
            AND u.block_number::bigint BETWEEN ${from.toString()} AND ${to.toString()}
            AND NOT EXISTS (SELECT 1 FROM chain_inclusions c WHERE c.chain_id = u.chain_id AND c.status = 'live'
                              AND c.user_op_hash = u.user_op_hash AND c.tx_hash = u.transaction_hash)`
        for (const r of rows) {
          yield* relay.reopen(chainId, r.user_op_hash, r.transaction_hash)
          yield* log.compensate({ key: `reorg:${r.transaction_hash}:${r.user_op_hash}`, accountId: r.account_id, entryId: r.audit_event_id, txHash: r.transaction_hash })
        }
        return rows.length
      })

    type Cursor = { readonly number: bigint; readonly hash: string }
    /** What the chain shows past the cursor, read with no transaction open (the pass's first phase). */
    interface Plan {
      /** The cursor the plan was read from: the transaction applies the plan only while it is still the cursor. */
      readonly cursor: Cursor | undefined
      /** The first run's starting block. */
      readonly start?: { readonly number: bigint; readonly block: Cursor }
      /** Where the chain forked below the cursor (its block left the chain). */
      readonly fork?: Cursor
      readonly from: bigint
      readonly to: bigint
      readonly toHash: string
      readonly events: ReadonlyArray<Log>
      /** The managed accounts' events among them, and their operations (decoded from the bundles' receipts). */
      readonly ours: ReadonlyArray<Log>
      readonly inclusions: ReadonlyArray<Inclusion>
      readonly reads: PassReads
    }

    const sameCursor = (a: Cursor | undefined, b: Cursor | undefined) =>
      a === undefined || b === undefined ? a === b : a.number === b.number && a.hash === b.hash

    /** Managed accounts among the events' senders (only their operations are read further). */
    const managedOf = (events: ReadonlyArray<Log>) =>
      Effect.gen(function*() {
        const senders = [...new Set(events.map(senderOfEvent))]
        const managed = senders.length === 0 ? [] : yield* sql<{ id: string; address: string }>`
          SELECT id, address FROM accounts WHERE chain_id = ${chainId} AND address IN ${sql.in(senders)}`
        const accountOf = new Map(managed.map((a) => [a.address, a.id]))
        return { accountOf, ours: events.filter((e) => accountOf.has(senderOfEvent(e))) }
      })

    const rangeOf = (reads: PassReads, from: bigint, to: bigint) =>
      ({ client, sql, chainId, delegationManager: network.delegation.DelegationManager, entryPoint: network.entryPoint, from, to, reads })

    /**
     * The first phase: every chain read the pass needs, with no transaction open and no row or
     * audit head locked (a hanging node holds nothing). It runs the reads the transaction will
     * ask for (the bundles' receipts, the DelegationManager's events with their receipts and
     * transactions, an adopted operation's bundle) through `reads`, which keeps them; its own
     * lookups are plain reads and their answers are not used.
     */
    const plan = Effect.gen(function*() {
      const reads = makePassReads(client)
      const head = (yield* rpc(() => client.getBlockNumber({ cacheTime: 0 }))) - BigInt(config.confirmations)
      const cursor = yield* readCursor
      if (cursor === undefined) {
        const start = Option.match(config.startBlock, { onNone: () => head, onSome: (n) => BigInt(n) - 1n })
        const first = start < 0n ? 0n : start
        const block = { number: first, hash: (yield* blockHash(first)) ?? "" }
        return { cursor, start: { number: start, block }, from: 1n, to: 0n, toHash: "", events: [], ours: [], inclusions: [], reads } satisfies Plan
      }
      const fork = (yield* blockHash(cursor.number)) === cursor.hash ? undefined : yield* forkPoint(cursor.number)
      const base = fork ?? cursor
      const from = base.number + 1n
      const to = head < base.number + BigInt(config.batchBlocks) ? head : base.number + BigInt(config.batchBlocks)
      if (to < from) return { cursor, ...(fork === undefined ? {} : { fork }), from, to, toHash: "", events: [], ours: [], inclusions: [], reads } satisfies Plan
      // The range's last block first: should the chain fork while the range is read, the next
      // pass finds this hash gone and reads the range again (never the other way round).
      const toHash = (yield* blockHash(to)) ?? ""
      const events = yield* rpc(() => userOperationEvents(client, network.entryPoint, from, to))
      const { ours } = yield* managedOf(events)
      const inclusions = yield* rpc(() => inclusionsOfEvents(reads.receipt, network.entryPoint, ours))
      // An operation built here and sent around the relay is adopted: its signature is read from
      // its bundle's transaction.
      const adoptable = inclusions.length === 0 ? [] : yield* sql<{ user_op_hash: string }>`
        SELECT DISTINCT b.user_op_hash FROM op_builds b WHERE b.chain_id = ${chainId}
          AND b.user_op_hash IN ${sql.in(inclusions.map((i) => i.userOpHash.toLowerCase()))}
          AND NOT EXISTS (SELECT 1 FROM user_operations u WHERE u.chain_id = b.chain_id AND u.user_op_hash = b.user_op_hash)`
      const adopted = new Set(adoptable.map((r) => r.user_op_hash))
      for (const inc of inclusions) {
        if (adopted.has(inc.userOpHash.toLowerCase())) yield* Effect.ignore(rpc(() => reads.transaction(inc.transactionHash)))
      }
      const range = rangeOf(reads, from, to)
      yield* redemptionsOf(range)
      yield* disablesOf(range)
      return { cursor, ...(fork === undefined ? {} : { fork }), from, to, toHash, events, ours, inclusions, reads } satisfies Plan
    })

    /** The second phase: one transaction under the follower's advisory lock writes what the plan read. */
    const apply = (planned: Plan) =>
      Effect.gen(function*() {
        const [lock] = yield* sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${ADVISORY_KEY}, ${chainId}) AS ok`
        if (lock?.ok !== true) return NONE
        planned.reads.seal()
        const cursor = yield* readCursor
        // Another process moved the cursor since the plan was read: its pass recorded the range.
        if (!sameCursor(cursor, planned.cursor)) return { ...NONE, cursor: cursor?.number }
        if (planned.start !== undefined) {
          yield* remember(planned.start.block.number, planned.start.block.hash)
          yield* writeCursor(planned.start.block.number, planned.start.block.hash)
          return { ...NONE, cursor: planned.start.number }
        }
        let base = cursor!
        let reorged = 0
        if (planned.fork !== undefined) {
          yield* Effect.logWarning(`follower: block ${base.number} (${base.hash}) left the chain; forked at ${planned.fork.number}`)
          reorged = yield* unwind(planned.fork.number)
          base = planned.fork
        }
        const { from, to, reads } = planned
        if (to < from) {
          if (reorged > 0) yield* writeCursor(base.number, base.hash)
          return { ...NONE, reorged, cursor: base.number }
        }

        // Only managed accounts' operations are read further (their bundles' receipts, kept by the plan).
        const { accountOf, ours } = yield* managedOf(planned.events)
        // The plan's operations, unless an account became managed since (then decoded again).
        const same = ours.length === planned.ours.length && ours.every((e, i) => e === planned.ours[i])
        const inclusions = same ? planned.inclusions : yield* rpc(() => inclusionsOfEvents(reads.receipt, network.entryPoint, ours))
        // Lock order: an operation's row before any audit head. A relay settlement moves its
        // operation's row, then appends to the account's log; this pass may settle several
        // operations, so it takes all their rows (in one order) before its first append, and
        // never holds a head while it waits for a row (docs/follower.md).
        // The open operations of the same senders are locked too: an inclusion used its sender's
        // nonce, and ours still open at it settle in this pass (Relay.observe).
        if (inclusions.length > 0) {
          yield* sql`SELECT id FROM user_operations WHERE chain_id = ${chainId}
                     AND (user_op_hash IN ${sql.in(inclusions.map((i) => i.userOpHash.toLowerCase()))}
                          OR (status = 'submitted' AND sender IN ${sql.in([...new Set(inclusions.map((i) => i.sender.toLowerCase()))])}))
                     ORDER BY id FOR UPDATE`
        }
        const blocksWithOurs = new Map<bigint, string>()
        /** Records one event once (by block hash and log index): `write` runs only for a new one. */
        const recordOnce = (e: ObservedEvent, write: Effect.Effect<string | undefined, unknown>) =>
          Effect.gen(function*() {
            blocksWithOurs.set(e.blockNumber, e.blockHash)
            const seen = yield* sql`SELECT 1 FROM chain_inclusions WHERE chain_id = ${chainId} AND block_hash = ${e.blockHash}
                                    AND log_index = ${e.logIndex} AND status = 'live'`
            if (seen.length > 0) return false
            const entryId = yield* write
            yield* sql`
              INSERT INTO chain_inclusions (chain_id, block_hash, log_index, block_number, tx_hash, kind, user_op_hash, account_id, audit_event_id, status)
              VALUES (${chainId}, ${e.blockHash}, ${e.logIndex}, ${e.blockNumber.toString()}, ${e.txHash}, ${e.kind},
                      ${e.userOpHash ?? null}, ${e.accountId}, ${entryId ?? null}, 'live')
              ON CONFLICT (chain_id, block_hash, log_index) DO UPDATE SET status = 'live', audit_event_id = EXCLUDED.audit_event_id`
            return true
          })

        let operations = 0
        for (const inc of inclusions) {
          const accountId = accountOf.get(inc.sender.toLowerCase())
          if (accountId === undefined) continue
          const event: ObservedEvent = {
            kind: "user_operation",
            blockHash: inc.blockHash.toLowerCase(),
            blockNumber: inc.blockNumber,
            logIndex: inc.logIndex,
            txHash: inc.transactionHash.toLowerCase(),
            userOpHash: inc.userOpHash.toLowerCase(),
            accountId
          }
          const written = yield* recordOnce(event, Effect.gen(function*() {
            const outcome = yield* relay.observe(chainId, inc, reads.transaction)
            return outcome === "unknown" ? yield* log.foreignOperation(accountId, inc) : yield* log.entryOfOperation(inc)
          }))
          if (written) operations++
        }

        const range = rangeOf(reads, from, to)
        const redemptions = yield* redemptionsOf(range)
        for (const r of redemptions) yield* recordOnce({ ...r, kind: "redemption" }, log.redemption(r))
        // Known delegations disabled around the relay (an operation of ours did it through its hooks).
        for (const d of yield* disablesOf(range)) {
          if (d.operationId === undefined) yield* recordOnce({ ...d, kind: "disable" }, log.disabled(d))
        }

        reorged += yield* vanished(from, to)
        for (const [n, h] of blocksWithOurs) yield* remember(n, h)
        yield* remember(to, planned.toHash)
        yield* writeCursor(to, planned.toHash)
        yield* sql`DELETE FROM chain_blocks WHERE chain_id = ${chainId} AND block_number < ${(to - BigInt(config.keepBlocks * 8)).toString()}`
        if (reads.late() > 0) yield* Effect.logDebug(`follower: ${reads.late()} chain reads made in the pass's transaction (known since its plan)`)
        return { blocks: Number(to - from + 1n), operations, redemptions: redemptions.length, reorged, cursor: to }
      })

    /** Another process's pass holds the follower (a hint: the transaction's try-lock decides). */
    const busy = sql<{ busy: boolean }>`
      SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ${ADVISORY_KEY}::bigint::oid
                       AND objid = ${chainId}::bigint::oid AND objsubid = 2 AND granted) AS busy`.pipe(Effect.map((rows) => rows[0]?.busy === true))

    const pass = Effect.gen(function*() {
      if (yield* busy) return NONE
      const planned = yield* plan
      return yield* retryLockConflicts(sql.withTransaction(apply(planned)))
    })

    // A pass that lost a lock conflict runs again at once; any other failure, a defect
    // included (a settlement's own errors die), is logged and left to the next pass: the
    // loop must outlive it (a database outage is logged once, and once when it ends:
    // LoopHealth). Interruption (the service stopping) is not caught.
    const health = makeLoopHealth(`chain follower on ${net.name}`)
    return health.pass(pass, NONE, `follower: pass on ${net.name} failed; the next pass retries`).pipe(
      Effect.withSpan("ChainFollower.followOnce", { attributes: { chainId } })
    )
  })

export const ChainFollowerLive = Layer.effect(
  ChainFollower,
  Effect.gen(function*() {
    const chains = yield* Chains
    const passes = new Map<number, Effect.Effect<PassResult>>()
    for (const net of chains.all) passes.set(net.chainId, yield* makeChainFollower(net))
    const followChain = (chainId: number) => passes.get(chainId) ?? Effect.succeed(NONE)
    const followOnce = Effect.forEach([...passes.values()], (pass) => pass, { concurrency: "unbounded" }).pipe(
      Effect.map((results) => results.reduce((sum, r) => ({
        blocks: sum.blocks + r.blocks,
        operations: sum.operations + r.operations,
        redemptions: sum.redemptions + r.redemptions,
        reorged: sum.reorged + r.reorged,
        cursor: sum.cursor ?? r.cursor
      }), NONE))
    )
    return ChainFollower.of({ followOnce, followChain })
  })
).pipe(Layer.provide(RedemptionHooksLive))

/**
 * Runs passes every `FOLLOWER_INTERVAL` (`0 seconds` turns it off), at once again while it is
 * catching up: one loop per chain, so a chain whose RPC is down waits alone.
 */
export const ChainFollowerScheduleLive = Layer.effectDiscard(Effect.gen(function*() {
  const follower = yield* ChainFollower
  const chains = yield* Chains
  const { batchBlocks, interval } = yield* FollowerConfig
  if (Duration.toMillis(interval) === 0) return
  for (const net of chains.all) {
    yield* runLoop({
      name: `chain follower on ${net.name}`,
      interval,
      pass: Effect.map(follower.followChain(net.chainId), (r) =>
        r.blocks >= batchBlocks ? "more" : r.blocks > 0 || r.reorged > 0 ? "worked" : "idle")
    })
  }
}))
