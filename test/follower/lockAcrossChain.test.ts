/**
 * The follower's pass locks nothing while it waits on the chain. A pass that records an
 * operation of ours locks its row (and its sender's open ones) and then appends to its account's
 * log (its audit head); were its chain reads made after that, a slow or hanging node (viem's
 * 10 s timeout, retried twice) would hold the relay's settlement of that account and every
 * append to its log behind it. The service reads the chain here through a loopback JSON-RPC gate,
 * which holds the pass's read of the DelegationManager's events (the last of its reads, made
 * after the operations' rows were locked before the pass was split) while the test tries the
 * operation's row and the account's head with NOWAIT from its own connection and looks for any
 * transaction left open. The pass then records the operation as usual.
 *
 * A plan is read before the pass's transaction, so another process may record the same range
 * meanwhile: the transaction applies a plan only while the cursor is the one it was read from.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { ADVISORY_KEY } from "../../src/follower/Follower.ts"
import { ensureAuditHead, holding } from "../support/locks.ts"
import { noOpenTransaction, rowLockFree, rpcGate, untilHeld } from "../support/rpcGate.ts"
import { testNetwork } from "../support/TestChain.ts"
import { testDatabaseName } from "../support/TestDatabase.ts"
import { startInstance } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { signBuild } from "../userops/helpers.ts"
import { cursorOf } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

describe("chain follower: locks and the chain", () => {
  it.live("a pass reads the chain before it locks an operation's row or its account's head", () =>
    Effect.gen(function*() {
      const gate = yield* rpcGate(testNetwork().rpcUrl)
      const service = yield* startInstance({ chain: { rpcUrl: gate.url }, config: { FOLLOWER_INTERVAL: "100 millis" } })
      const { sql } = service
      const chainId = yield* Effect.promise(() => service.chain.client.getChainId())
      yield* waitFor("the follower's first pass", cursorOf(sql, chainId))
      const delegationManager = (testNetwork().delegation.DelegationManager as string).toLowerCase()
      // The pass's read of the DelegationManager's events (redemptions and disables of known grants).
      const eventsRead = (body: string) => body.includes("eth_getLogs") && body.toLowerCase().includes(delegationManager)

      // No pass while an operation of ours goes on chain: the next one reads its block.
      const resumeFollower = yield* holding(sql, sql`SELECT pg_advisory_xact_lock(${ADVISORY_KEY}, ${chainId})`)
      const key = generatePrivateKey()
      const session = yield* signIn(service.baseUrl, privateKeyToAccount(key))
      const accountId = session.accounts[0]!.id
      const api = yield* makeClient({ baseUrl: service.baseUrl, token: session.token })
      const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const submitted = yield* api.userops.submit({ payload: yield* signBuild(build, key) })
      yield* waitFor("inclusion", service.bundler.getUserOperationReceipt(submitted.userOpHash as Hash).pipe(
        Effect.orDie,
        Effect.map((r) => r ?? undefined)
      ))
      yield* ensureAuditHead(sql, accountId)
      // While another transaction holds the follower, this process reads nothing for a plan it
      // could not apply (the pass sees the lock in pg_locks first).
      const quiet = gate.seen(eventsRead)
      yield* Effect.sleep("600 millis")
      assert.strictEqual(gate.seen(eventsRead), quiet, "the follower read the chain while another held its lock")

      const before = gate.held()
      gate.hold(eventsRead)
      yield* resumeFollower
      yield* untilHeld(gate.held, before, "the DelegationManager's events")
      yield* Effect.gen(function*() {
        assert.isTrue(yield* rowLockFree(submitted.userOpId, "user_operations"), "the pass held the operation's row across its chain read")
        assert.isTrue(yield* rowLockFree(accountId, "audit_heads"), "the pass held the account's audit head across its chain read")
        assert.isTrue(yield* noOpenTransaction, "the pass held a transaction open across its chain read")
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      gate.release()

      // Then the pass records the operation's inclusion as usual.
      const recorded = sql<{ n: number }>`SELECT count(*)::int AS n FROM chain_inclusions
        WHERE chain_id = ${chainId} AND user_op_hash = ${submitted.userOpHash.toLowerCase()} AND status = 'live'`.pipe(
        Effect.orDie,
        Effect.map((rows) => (rows[0]!.n === 1 ? true : undefined))
      )
      yield* waitFor("the operation's inclusion recorded", recorded)
      const [op] = yield* sql<{ status: string }>`SELECT status FROM user_operations WHERE id = ${submitted.userOpId}`
      assert.strictEqual(op?.status, "included")
      yield* service.stop
    }).pipe(Effect.scoped), { timeout: 90_000 })

  it.live("a plan read before another process recorded its range is not applied: the cursor never moves back", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      const gate = yield* rpcGate(testNetwork().rpcUrl)
      // Two instances following one database: `a` reads the chain through the gate, `b` (started
      // once `a` holds a plan, so that `a` plans first) directly.
      const a = yield* startInstance({ database: { name }, chain: { rpcUrl: gate.url }, config: { FOLLOWER_INTERVAL: "100 millis" } })
      const { sql } = a
      const chainId = yield* Effect.promise(() => a.chain.client.getChainId())
      // Every position the cursor takes, in order (a trigger of the test's own), per chain: the
      // instances may follow the run's second chain too, whose cursor is far lower (818, 271, 819
      // was this chain's, the other's, this chain's again, once a trigger recorded both).
      yield* sql`CREATE TABLE test_cursor_moves (seq bigserial PRIMARY KEY, chain_id bigint NOT NULL, block_number bigint NOT NULL)`
      yield* sql.unsafe(`CREATE FUNCTION test_cursor_moved() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN INSERT INTO test_cursor_moves (chain_id, block_number) VALUES (NEW.chain_id, NEW.block_number); RETURN NEW; END $$`)
      yield* sql`CREATE TRIGGER test_cursor_moved AFTER INSERT OR UPDATE ON chain_cursor FOR EACH ROW EXECUTE FUNCTION test_cursor_moved()`
      const cursor = cursorOf(sql, chainId)
      yield* waitFor("the first pass", cursor)

      // `a` plans a new range and waits at its last read…
      const delegationManager = (testNetwork().delegation.DelegationManager as string).toLowerCase()
      const eventsRead = (body: string) => body.includes("eth_getLogs") && body.toLowerCase().includes(delegationManager)
      const before = gate.held()
      gate.hold(eventsRead)
      const mine = Effect.promise(() => a.chain.client.request({ method: "anvil_mine" as never, params: ["0x1"] as never }))
      yield* mine
      yield* untilHeld(gate.held, before, "the DelegationManager's events")
      // …while `b` records that range and the next block's.
      const b = yield* startInstance({ database: { name, create: false }, config: { FOLLOWER_INTERVAL: "100 millis" } })
      yield* mine
      const head = yield* Effect.promise(() => a.chain.client.getBlockNumber({ cacheTime: 0 }))
      yield* waitFor("b's pass past a's plan", cursor.pipe(Effect.map((n) => (n !== undefined && n >= head ? n : undefined))))
      const heads = (body: string) => body.includes("eth_blockNumber")
      const passesOfA = gate.seen(heads)
      gate.release()
      // `a`'s pass ends (its next one reads the head), having applied nothing.
      yield* waitFor("a's next pass", Effect.sync(() => (gate.seen(heads) > passesOfA ? true : undefined)))
      const moves = (yield* sql<{ block_number: string }>`SELECT block_number::text FROM test_cursor_moves
        WHERE chain_id = ${chainId} ORDER BY seq`).map((m) => BigInt(m.block_number))
      const back = moves.findIndex((n, i) => i > 0 && n < moves[i - 1]!)
      assert.strictEqual(back, -1, `the cursor moved back: ${moves.join(", ")}`)
      yield* b.stop
      yield* a.stop
    }), { timeout: 90_000 })
})
