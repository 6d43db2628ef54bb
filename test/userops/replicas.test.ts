/**
 * The relay's exactly-once and nothing-lost claims, with several service instances over
 * one database on the run's local network: 50 concurrent polls on two instances, the
 * bundler going down and coming back, and an instance killed between persisting an
 * operation and forwarding it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { Network } from "../../src/chain/Network.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { testNetwork } from "../support/TestChain.ts"
import { createDatabase, testDatabaseName } from "../support/TestDatabase.ts"
import { replicaEnv, startService, stopService } from "../support/ServiceProcess.ts"
import { startInstance } from "../support/TestServer.ts"
import { bundlerProxy } from "./bundlerProxy.ts"
import { signBuild } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"


const instanceConfig = (overrides: Record<string, string> = {}) => ({
  RELAY_RECONCILE_INTERVAL: "300 millis",
  RELAY_SEND_LEASE: "1 second",
  BUNDLER_RETRIES: "0",
  BUNDLER_TIMEOUT: "3 seconds",
  ...overrides
})

/**
 * Two in-process instances over one new database, started together: the database is made first
 * (a copy of the migrated template), so neither waits for the other. Starting them one after the
 * other doubled the time that beside 4 CPU burners (load 35) ran past the test's bound.
 */
const twoInstances = (config: Record<string, string>) =>
  Effect.gen(function*() {
    const database = testDatabaseName()
    yield* createDatabase(database, { migrated: true })
    return yield* Effect.all(
      [startInstance({ config, database: { name: database, create: false } }), startInstance({ config, database: { name: database, create: false } })],
      { concurrency: 2 }
    )
  })

/**
 * The time a test may take: each start of an instance (a database, the service's layers, its
 * listener) took 15-20 s at load 35, a service process up to its own bound (ServiceProcess.ts,
 * 300 s); a bound below them ended tests that were only slow.
 */
const IN_PROCESS = 240_000
const WITH_PROCESS = 420_000

const signedFreeze = (baseUrl: string) =>
  Effect.gen(function*() {
    const key = generatePrivateKey()
    const session = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* makeClient({ baseUrl, token: session.token })
    const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
    return { key, token: session.token, api, build, signed: yield* signBuild(build, key), account: session.accounts[0]! }
  })

const auditCount = (sql: SqlClient.SqlClient, operationId: string) =>
  sql<{ n: string }>`SELECT count(*)::text AS n FROM audit_entries WHERE operation_id = ${operationId}`.pipe(
    Effect.map((rows) => Number(rows[0]!.n)),
    Effect.orDie
  )

const operationRow = (sql: SqlClient.SqlClient, id: string) =>
  sql<{ status: string; sent_at: Date | null; last_error: string | null }>`
    SELECT status, sent_at, last_error FROM user_operations WHERE id = ${id}`.pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie
  )

/** Waits (without polling the service) until `check` holds: a bound for a broken run, not a pace (at load 30 a receipt took 20 s). */
const eventually = <A>(what: string, effect: Effect.Effect<A>, check: (a: A) => boolean, timeout = Duration.seconds(90)) =>
  effect.pipe(
    Effect.flatMap((a) => (check(a) ? Effect.succeed(a) : Effect.fail(`not yet: ${what}`))),
    Effect.retry(Schedule.spaced(Duration.millis(100))),
    Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.die(new Error(`timed out waiting for ${what}`)) })
  )

describe("relay across service instances", () => {
  it.live("50 concurrent polls of a settling operation on two instances append exactly one audit entry", () =>
    Effect.gen(function*() {
      // Reconcilers effectively off: the polls are what settles it.
      const [a, b] = yield* twoInstances(instanceConfig({ RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds" }))
      const user = yield* signedFreeze(a.baseUrl)
      const submitted = yield* user.api.userops.submit({ payload: user.signed })
      assert.strictEqual(submitted.status, "submitted")
      // Let the bundler include it first, so every poll sees the receipt and races to settle.
      yield* eventually(
        "bundler receipt",
        a.bundler.getUserOperationReceipt(submitted.userOpHash as Hash).pipe(Effect.orDie),
        (r) => r !== null
      )
      const apiA = user.api
      const apiB = yield* makeClient({ baseUrl: b.baseUrl, token: user.token })
      const receipts = yield* Effect.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? apiA : apiB).userops.get({ params: { userOpId: submitted.userOpId }, query: {} })),
        { concurrency: "unbounded" }
      )
      assert.isTrue(receipts.every((r) => r.status === "included" && r.outcome === "mined"))
      const auditIds = new Set(receipts.map((r) => r.auditEventId))
      assert.strictEqual(auditIds.size, 1)
      assert.strictEqual(yield* auditCount(a.sql, submitted.userOpId), 1)
      // The on-executed effect ran once too: the account is frozen, its chain has one entry.
      const rules = yield* apiB.accounts.getRules({ query: {} })
      assert.isTrue(rules.frozen)
      const chainLength = yield* a.sql<{ length: number }>`SELECT length FROM audit_heads WHERE account_id = ${user.account.id}`
      assert.strictEqual(chainLength[0]!.length, 1)
      yield* b.stop
      yield* a.stop
    }), IN_PROCESS)

  it.live("50 concurrent polls split between the service here and a second service PROCESS append exactly one audit entry", () =>
    Effect.gen(function*() {
      const database = testDatabaseName()
      yield* createDatabase(database, { migrated: true })
      const config = instanceConfig({ RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds" })
      // The second replica is its own OS process (src/main.ts) on the same database and chain,
      // started beside the first (its start is the longest part of the test on a loaded machine).
      const [a, b] = yield* Effect.all([
        startInstance({ config, database: { name: database, create: false } }),
        Effect.acquireRelease(
          startService(replicaEnv(database, { RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds" })),
          (b) => stopService(b.child)
        )
      ], { concurrency: 2 })
      const user = yield* signedFreeze(a.baseUrl)
      const submitted = yield* user.api.userops.submit({ payload: user.signed })
      // The answer does not wait for the sent mark; it lands right after (or the operation settles first).
      yield* eventually(
        "sent mark",
        operationRow(a.sql, submitted.userOpId),
        (r) => r !== undefined && (r.sent_at !== null || r.status !== "submitted")
      )
      yield* eventually(
        "bundler receipt",
        a.bundler.getUserOperationReceipt(submitted.userOpHash as Hash).pipe(Effect.orDie),
        (r) => r !== null
      )
      const apiB = yield* makeClient({ baseUrl: b.baseUrl, token: user.token })
      const receipts = yield* Effect.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? user.api : apiB).userops.get({ params: { userOpId: submitted.userOpId }, query: {} })),
        { concurrency: "unbounded" }
      )
      assert.isTrue(receipts.every((r) => r.status === "included" && r.outcome === "mined"))
      assert.strictEqual(new Set(receipts.map((r) => r.auditEventId)).size, 1)
      assert.strictEqual(yield* auditCount(a.sql, submitted.userOpId), 1)
      assert.isTrue((yield* apiB.accounts.getRules({ query: {} })).frozen)
      assert.strictEqual(yield* stopService(b.child), 0, b.output())
      yield* a.stop
    }).pipe(Effect.scoped), WITH_PROCESS)

  it.live("bundler down: envelope error, operation kept unsent, sent and settled by the reconciler once it is back", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const server = yield* startInstance({ config: instanceConfig(), chain: { bundlerUrl: proxy.url } })
      const user = yield* signedFreeze(server.baseUrl)
      proxy.setMode("down")
      const error = yield* user.api.userops.submit({ payload: user.signed }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "ServiceUnavailable")
      assert.include(error.message, "chain 31337")
      const userOpId = (error as { details?: { userOpId?: string } }).details?.userOpId as string
      assert.isString(userOpId)
      // Kept, unsent; polling answers it as submitted/pending while the bundler is away.
      const pending = yield* user.api.userops.get({ params: { userOpId }, query: {} })
      assert.strictEqual(pending.status, "submitted")
      assert.strictEqual(pending.outcome, "pending")
      yield* Effect.sleep(Duration.seconds(1.5)) // reconciler passes fail meanwhile; nothing is lost
      const row = yield* operationRow(server.sql, userOpId)
      assert.strictEqual(row?.status, "submitted")
      assert.isNull(row?.sent_at)
      assert.isNotNull(row?.last_error)
      assert.strictEqual(yield* auditCount(server.sql, userOpId), 0)
      assert.strictEqual(proxy.forwardedSends(), 0)

      proxy.setMode("up")
      // Nobody polls: the reconciler sends it and settles it.
      const settled = yield* eventually("settled by the reconciler", operationRow(server.sql, userOpId), (r) => r?.status !== "submitted")
      assert.strictEqual(settled?.status, "included")
      assert.strictEqual(proxy.forwardedSends(), 1)
      assert.strictEqual(yield* auditCount(server.sql, userOpId), 1)
      const receipt = yield* user.api.userops.get({ params: { userOpId }, query: {} })
      assert.strictEqual(receipt.outcome, "mined")
      assert.isTrue((yield* user.api.accounts.getRules({ query: {} })).frozen)
      yield* server.stop
    }).pipe(Effect.scoped), IN_PROCESS)

  it.live("an instance killed between persisting and forwarding: the next one sends and settles it, nothing lost", () =>
    Effect.gen(function*() {
      const database = testDatabaseName()
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "hang-send")
      const doomed = yield* startInstance({
        config: instanceConfig({ BUNDLER_TIMEOUT: "60 seconds" }),
        database: { name: database },
        chain: { bundlerUrl: proxy.url }
      })
      const user = yield* signedFreeze(doomed.baseUrl)
      // The submit persists the operation, then hangs forwarding it ...
      yield* user.api.userops.submit({ payload: user.signed }).pipe(Effect.ignore, Effect.forkDetach)
      const persisted = yield* eventually(
        "operation persisted",
        doomed.sql<{ id: string }>`SELECT id FROM user_operations`.pipe(Effect.orDie),
        (rows) => rows.length === 1
      )
      const userOpId = persisted[0]!.id
      // Stored and never sent, as the doomed instance leaves it. Read now, before the next
      // instance starts: its reconciler may send it before the test's next read (its lease, 1 s,
      // has long run out by then, and a loaded machine starts the instance slowly).
      const before = yield* operationRow(doomed.sql, userOpId)
      assert.strictEqual(before?.status, "submitted")
      assert.isNull(before?.sent_at)
      // ... and the instance dies there: it hangs (it will never forward) and is being stopped;
      // stopping waits for in-flight requests, so it runs on in the background meanwhile.
      const stopping = yield* Effect.forkDetach(doomed.stop)
      const unknownToBundler = yield* Effect.gen(function*() {
        const bundler = yield* Bundler
        return yield* bundler.getUserOperationReceipt(user.build.userOpHash as Hash)
      }).pipe(Effect.provide(Bundler.layerWith({ retries: 0 }).pipe(Layer.provide(Network.layer(testNetwork())))), Effect.orDie)
      assert.isNull(unknownToBundler)
      assert.strictEqual(proxy.forwardedSends(), 0)

      const next = yield* startInstance({ config: instanceConfig(), database: { name: database, create: false } })
      const settled = yield* eventually("settled after restart", operationRow(next.sql, userOpId), (r) => r?.status !== "submitted")
      assert.strictEqual(settled?.status, "included")
      assert.strictEqual(yield* auditCount(next.sql, userOpId), 1)
      const api = yield* makeClient({ baseUrl: next.baseUrl, token: user.token })
      const receipt = yield* api.userops.get({ params: { userOpId }, query: {} })
      assert.strictEqual(receipt.outcome, "mined")
      assert.strictEqual(receipt.userOpHash, user.build.userOpHash)
      assert.isTrue((yield* api.accounts.getRules({ query: {} })).frozen)
      // The dead instance's forward finally fails; it must not disturb the settled operation.
      proxy.releaseHanging()
      yield* Fiber.join(stopping)
      const after = yield* operationRow(next.sql, userOpId)
      assert.strictEqual(after?.status, "included")
      assert.isNull(after?.last_error)
      assert.strictEqual(proxy.forwardedSends(), 0)
      assert.strictEqual(yield* auditCount(next.sql, userOpId), 1)
      yield* next.stop
    }).pipe(Effect.scoped), IN_PROCESS)
})
