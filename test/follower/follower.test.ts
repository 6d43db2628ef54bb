/**
 * The chain is the source of the record (issue 12): the chain follower records what
 * executed whichever path it took, and lost or refused bundler answers never settle an
 * operation as failed while the chain holds it.
 *
 * - a build sent straight to the bundler (around the relay) appears once, marked
 *   `onchain_unrelayed`, with its effect applied, with two service instances following;
 * - an operation nobody built here (the account's own kit, its own `handleOps`) appears;
 * - a bundler that loses one answer in four: every operation's record equals the chain.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address, Hash } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { findInclusion } from "../../src/chain/Inclusions.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { makeAttacker } from "../delegations/attacker.ts"
import { testNetwork } from "../support/TestChain.ts"
import { testDatabaseName } from "../support/TestDatabase.ts"
import { startInstance } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { bundlerProxy } from "../userops/bundlerProxy.ts"
import { signBuild } from "../userops/helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("chain follower", () => {
  it.live("a build sent around the relay is recorded once (two instances following), its effect applied", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      const a = yield* startInstance({ database: { name } })
      const b = yield* startInstance({ database: { name, create: false } })
      const key = generatePrivateKey()
      const session = yield* signIn(a.baseUrl, privateKeyToAccount(key))
      const api = yield* makeClient({ baseUrl: a.baseUrl, token: session.token })
      const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const signed = yield* signBuild(build, key)
      // Straight to the bundler: the relay never sees it.
      const hash = yield* a.bundler.sendUserOperation(fromWire(signed)).pipe(Effect.orDie)
      assert.strictEqual(hash.toLowerCase(), build.userOpHash.toLowerCase())

      const entry = yield* waitFor("the follower's entry", api.activity.list({ query: { limit: 50 } }).pipe(
        Effect.orDie,
        Effect.map((page) => page.items.find((e) => e.action === "account_freeze"))
      ))
      assert.strictEqual(entry.status, "executed")
      assert.strictEqual(entry.provenance, "onchain_unrelayed")
      assert.match(entry.txHash ?? "", /^0x[0-9a-f]{64}$/)
      // The freeze took effect in the record as on chain.
      assert.isTrue((yield* api.accounts.getRules({ query: {} })).frozen)
      // The same signed operation relayed afterwards is the operation the chain holds: included, not refused (AA25).
      const relayed = yield* api.userops.submit({ payload: signed })
      assert.strictEqual(relayed.status, "included")
      assert.strictEqual(relayed.outcome, "mined")
      // Both instances keep following: still exactly one entry.
      yield* Effect.sleep(Duration.seconds(2))
      const page = yield* api.activity.list({ query: { limit: 50 } })
      assert.strictEqual(page.items.filter((e) => e.txHash === entry.txHash).length, 1)
      const verified = yield* a.sql<{ n: number }>`SELECT count(*)::int AS n FROM chain_inclusions WHERE tx_hash = ${entry.txHash!}`
      assert.strictEqual(verified[0]!.n, 1)
      yield* b.stop
      yield* a.stop
    }), { timeout: 90_000 })

  it.live("an operation another bundler already executed, then relayed (refused AA25), settles from the chain", () =>
    Effect.gen(function*() {
      // No follower: the relay's own refusal check is what reads the chain here.
      const a = yield* startInstance({ config: { FOLLOWER_INTERVAL: "0 seconds", RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds" } })
      const key = generatePrivateKey()
      const session = yield* signIn(a.baseUrl, privateKeyToAccount(key))
      const api = yield* makeClient({ baseUrl: a.baseUrl, token: session.token })
      const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const signed = yield* signBuild(build, key)
      const hash = yield* a.bundler.sendUserOperation(fromWire(signed)).pipe(Effect.orDie)
      yield* waitFor("the other bundler's inclusion", a.bundler.getUserOperationReceipt(hash).pipe(
        Effect.orDie,
        Effect.map((r) => r ?? undefined)
      ))
      const receipt = yield* api.userops.submit({ payload: signed })
      assert.strictEqual(receipt.status, "included")
      assert.strictEqual(receipt.outcome, "mined")
      assert.isTrue((yield* api.accounts.getRules({ query: {} })).frozen)
      const entries = yield* a.sql<{ status: string }>`SELECT status FROM audit_entries WHERE operation_id = ${receipt.userOpId}`
      assert.deepStrictEqual(entries.map((e) => e.status), ["executed"])
      yield* a.stop
    }), { timeout: 90_000 })

  it.live("a restart catches up from the stored cursor: what executed while nothing followed is recorded once", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      const first = yield* startInstance({ database: { name } })
      const users = yield* Effect.forEach([generatePrivateKey(), generatePrivateKey()], (key) =>
        Effect.gen(function*() {
          const session = yield* signIn(first.baseUrl, privateKeyToAccount(key))
          return { key, session }
        }))
      const cursor = () =>
        first.sql<{ n: string }>`SELECT block_number::text AS n FROM chain_cursor`.pipe(Effect.orDie, Effect.map((r) => r[0]?.n))
      yield* waitFor("a cursor", cursor())
      yield* first.stop
      // Nothing follows now; both accounts freeze around the relay.
      const second = yield* startInstance({ database: { name, create: false }, config: { FOLLOWER_INTERVAL: "0 seconds" } })
      for (const u of users) {
        const api = yield* makeClient({ baseUrl: second.baseUrl, token: u.session.token })
        const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        const hash = yield* second.bundler.sendUserOperation(fromWire(yield* signBuild(build, u.key))).pipe(Effect.orDie)
        yield* waitFor("inclusion", second.bundler.getUserOperationReceipt(hash).pipe(Effect.orDie, Effect.map((r) => r ?? undefined)))
      }
      yield* second.stop
      // A process that follows again reads from where the first one stopped.
      const third = yield* startInstance({ database: { name, create: false } })
      const count = () =>
        third.sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_entries WHERE action = 'account_freeze' AND provenance = 'onchain_unrelayed'`.pipe(
          Effect.orDie,
          Effect.map((r) => r[0]!.n)
        )
      yield* waitFor("both freezes recorded", count().pipe(Effect.map((n) => (n >= 2 ? n : undefined))))
      yield* Effect.sleep(Duration.seconds(1))
      assert.strictEqual(yield* count(), 2)
      const frozen = yield* third.sql<{ frozen: boolean }>`SELECT frozen FROM accounts WHERE id IN ${third.sql.in(users.map((u) => u.session.accounts[0]!.id))}`
      assert.deepStrictEqual(frozen.map((r) => r.frozen), [true, true])
      yield* third.stop
    }), { timeout: 90_000 })

  it.live("a pass that dies (its record cannot be written) does not stop the follower: once it can, it records", () =>
    Effect.gen(function*() {
      const a = yield* startInstance({})
      const key = generatePrivateKey()
      const session = yield* signIn(a.baseUrl, privateKeyToAccount(key))
      const api = yield* makeClient({ baseUrl: a.baseUrl, token: session.token })
      const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const signed = yield* signBuild(build, key)
      // Settling writes a notification with the entry; without its table every pass that
      // reaches this operation dies (the recorder's database errors are defects).
      yield* a.sql`ALTER TABLE notifications RENAME TO notifications_away`.pipe(Effect.orDie)
      const hash = yield* a.bundler.sendUserOperation(fromWire(signed)).pipe(Effect.orDie)
      yield* waitFor("the inclusion on chain", Effect.promise(() =>
        findInclusion(a.chain.client, testNetwork().entryPoint, hash as Hash, 10_000n).catch(() => undefined)
      ))
      yield* Effect.sleep(Duration.seconds(3)) // passes run and die meanwhile
      const before = yield* api.activity.list({ query: { limit: 50 } })
      assert.isUndefined(before.items.find((e) => e.action === "account_freeze"))
      yield* a.sql`ALTER TABLE notifications_away RENAME TO notifications`.pipe(Effect.orDie)
      const entry = yield* waitFor("the follower's entry", api.activity.list({ query: { limit: 50 } }).pipe(
        Effect.orDie,
        Effect.map((page) => page.items.find((e) => e.action === "account_freeze"))
      ))
      assert.strictEqual(entry.provenance, "onchain_unrelayed")
      yield* a.stop
    }), { timeout: 90_000 })

  it.live("an operation nobody built here (the account's own handleOps) is recorded as unrelayed", () =>
    Effect.gen(function*() {
      const a = yield* startInstance({})
      const key = generatePrivateKey()
      const session = yield* signIn(a.baseUrl, privateKeyToAccount(key))
      const api = yield* makeClient({ baseUrl: a.baseUrl, token: session.token })
      const attacker = yield* makeAttacker(key, session.accounts[0]!.address)
      const outcome = yield* Effect.promise(() =>
        attacker.viaHandleOps({ to: privateKeyToAccount(generatePrivateKey()).address as Address, data: "0x" })
      )
      assert.isTrue(outcome.ok)
      const entry = yield* waitFor("the foreign operation's entry", api.activity.list({ query: { limit: 50 } }).pipe(
        Effect.orDie,
        Effect.map((page) => page.items.find((e) => e.action === "user_operation"))
      ))
      assert.strictEqual(entry.status, "executed")
      assert.strictEqual(entry.provenance, "onchain_unrelayed")
      assert.strictEqual(entry.actor, "owner")
      yield* a.stop
    }), { timeout: 90_000 })

  it.live("a bundler losing one answer in four: every operation's record equals the chain, one entry each", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "drop-answers")
      const a = yield* startInstance({
        config: {
          RELAY_RECONCILE_INTERVAL: "300 millis",
          RELAY_RESEND_AFTER: "1 second",
          RELAY_SEND_LEASE: "2 seconds",
          BUNDLER_RETRIES: "0",
          BUNDLER_TIMEOUT: "3 seconds"
        },
        chain: { bundlerUrl: proxy.url }
      })
      const users = yield* Effect.forEach(Array.from({ length: 12 }, () => generatePrivateKey()), (key) =>
        Effect.gen(function*() {
          const session = yield* signIn(a.baseUrl, privateKeyToAccount(key))
          return { key, api: yield* makeClient({ baseUrl: a.baseUrl, token: session.token }) }
        }), { concurrency: 4 })
      // Each account freezes: some submissions answer 503/504 (the answer was lost), all are stored.
      yield* Effect.forEach(users, (u) =>
        Effect.gen(function*() {
          const build = yield* u.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
          yield* u.api.userops.submit({ payload: yield* signBuild(build, u.key) }).pipe(Effect.ignore)
        }), { concurrency: 6 })

      const rows = yield* waitFor("every operation settled", a.sql<{ id: string; user_op_hash: string; status: string; outcome: string; account_id: string }>`
        SELECT id, user_op_hash, status, outcome, account_id FROM user_operations`.pipe(
        Effect.orDie,
        Effect.map((rs) => rs.length === users.length && rs.every((r) => r.status !== "submitted") ? rs : undefined)
      ), 60)
      for (const row of rows) {
        const onChain = yield* Effect.promise(() =>
          findInclusion(a.chain.client, testNetwork().entryPoint, row.user_op_hash as Hash, 10_000n)
        )
        assert.isDefined(onChain, `operation ${row.id} is on chain`)
        assert.strictEqual(row.status, onChain!.success ? "included" : "failed", `operation ${row.id}: ${row.outcome}`)
        const entries = yield* a.sql<{ status: string }>`SELECT status FROM audit_entries WHERE operation_id = ${row.id}`
        assert.deepStrictEqual(entries.map((e) => e.status), ["executed"], `operation ${row.id} has one executed entry`)
        const frozen = yield* a.sql<{ frozen: boolean }>`SELECT frozen FROM accounts WHERE id = ${row.account_id}`
        assert.isTrue(frozen[0]!.frozen, `account ${row.account_id} is frozen as on chain`)
      }
      const chainEntries = yield* a.sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_entries WHERE status <> 'executed'`
      assert.strictEqual(chainEntries[0]!.n, 0)
      yield* a.stop
    }), { timeout: 120_000 })
})
