/**
 * `BuildRepo.storeOrShare` against the real PostgreSQL (one function call since migration
 * 0420): identical builds requested at once over many connections (as several processes would)
 * store one row and every other caller is answered that row, also one committed while they
 * waited for its lock (the lookup runs after the lock); a different share key, or an
 * identical build once the stored one's operation failed, is stored anew.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { makeBuildRepo, type NewBuild } from "../../src/builds/BuildRepo.ts"
import type { UserOperation } from "../../src/domain/Operations.ts"
import { freshSigner, insertAccount } from "../audit/support.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"

const hex32 = () => `0x${crypto.randomUUID().replace(/-/g, "").repeat(2)}`

const buildOf = (accountId: string, signer: string, userOpHash: string, shareKey: string): NewBuild => {
  const userOp: UserOperation = {
    sender: "0x1111111111111111111111111111111111111111",
    nonce: "7",
    callData: "0xabcdef",
    callGasLimit: "100000",
    verificationGasLimit: "100000",
    preVerificationGas: "50000",
    maxFeePerGas: "1000000000",
    maxPriorityFeePerGas: "1000000",
    signature: "0x",
    entryPoint: "0x0000000071727de22e5e9d8baf0edac6f37da032",
    chainId: 31337
  }
  const id = `bld_${crypto.randomUUID()}`
  return {
    id,
    accountId,
    signerAddress: signer,
    intentType: "send",
    chainId: 31337,
    entryPoint: userOp.entryPoint,
    userOp,
    userOpHash,
    riskReducing: false,
    sponsored: true,
    humanSummary: "Send 1 USDC",
    metadata: { amount: 1 },
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 600_000),
    answer: { buildId: id, note: "the answer identical requests get" },
    shareKey
  }
}

/** The repository, a new account and an operation hash of its own, for one test. */
const fresh = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const signer = freshSigner()
  return { sql, repo: makeBuildRepo(sql, () => undefined), signer, accountId: yield* insertAccount(signer), hash: hex32() }
})

/** How many builds of `hash` are stored. */
const storedOf = (hash: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM op_builds WHERE user_op_hash = ${hash}`).pipe(
    Effect.map(([row]) => row!.n)
  )

layer(TestDatabaseLive({ maxConnections: 10 }), { excludeTestServices: true })("BuildRepo.storeOrShare", (it) => {
  it.effect("twenty identical builds at once over ten connections: one row, every other caller answered it", () =>
    Effect.gen(function*() {
      const { sql, repo, signer, accountId, hash } = yield* fresh
      const builds = Array.from({ length: 20 }, () => buildOf(accountId, signer, hash, "send:1"))
      const answers = yield* Effect.forEach(builds, (b) => repo.storeOrShare(b), { concurrency: "unbounded" })
      const rows = yield* sql<{ id: string; answer: unknown; metadata: unknown; created_at: Date; nonce: string }>`
        SELECT id, answer, metadata, created_at, nonce FROM op_builds WHERE user_op_hash = ${hash}`
      assert.strictEqual(rows.length, 1)
      const stored = rows[0]!
      assert.strictEqual(answers.filter((a) => a === undefined).length, 1, "exactly one caller stored its build")
      const storer = builds[answers.findIndex((a) => a === undefined)]!
      assert.strictEqual(stored.id, storer.id)
      assert.deepStrictEqual(stored.answer, { buildId: storer.id, note: "the answer identical requests get" })
      assert.deepStrictEqual(stored.metadata, { amount: 1 })
      assert.strictEqual(stored.nonce, "7")
      assert.strictEqual(stored.created_at.getTime(), storer.createdAt.getTime())
      for (const a of answers.filter((x) => x !== undefined)) {
        assert.deepStrictEqual(a, { id: storer.id, answer: stored.answer, metadata: { amount: 1 } })
      }
      // The stored row reads back through the repository whole.
      const found = yield* repo.findById(storer.id)
      assert.strictEqual(found?.userOpHash, hash)
      assert.deepStrictEqual(found?.userOp, storer.userOp)
      assert.strictEqual(found?.humanSummary, "Send 1 USDC")
    }))

  it.effect("a build committed while the others wait for its lock is the one they all answer (the lookup runs after the lock)", () =>
    Effect.gen(function*() {
      const { sql, repo, signer, accountId, hash } = yield* fresh
      const holder = buildOf(accountId, signer, hash, "send:1")
      const waiting = Array.from({ length: 8 }, () => buildOf(accountId, signer, hash, "send:1"))
      // Another builder of the same operation holds the lock mid-transaction, then stores its
      // build and commits: only then may the others go on, and each must find that build.
      const locked = yield* Deferred.make<void>()
      const other = yield* Effect.forkChild(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`op_build:${hash}`}, 0))`
        yield* Deferred.succeed(locked, undefined)
        yield* Effect.sleep("300 millis")
        return yield* repo.storeOrShare(holder)
      }).pipe(sql.withTransaction, Effect.orDie))
      yield* Deferred.await(locked)
      const answers = yield* Effect.forEach(waiting, (b) => repo.storeOrShare(b), { concurrency: "unbounded" })
      assert.isUndefined(yield* Fiber.join(other))
      assert.deepStrictEqual(answers.map((a) => a?.id), waiting.map(() => holder.id))
      assert.strictEqual(yield* storedOf(hash), 1)
    }))

  it.effect("another share key, or the same build after its operation failed, is stored anew", () =>
    Effect.gen(function*() {
      const { sql, repo, signer, accountId, hash } = yield* fresh
      const first = buildOf(accountId, signer, hash, "send:1")
      assert.isUndefined(yield* repo.storeOrShare(first))
      assert.strictEqual((yield* repo.storeOrShare(buildOf(accountId, signer, hash, "send:1")))?.id, first.id)
      assert.isUndefined(yield* repo.storeOrShare(buildOf(accountId, signer, hash, "other")))
      yield* sql`
        INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                     user_op_hash, signature_digest, user_op, status, outcome, send_attempts, submitted_at)
        VALUES (${`uop_${crypto.randomUUID()}`}, ${first.id}, ${accountId}, ${signer}, 'send', 31337, ${first.userOp.sender}, '7',
                ${hash}, ${hex32()}, ${JSON.stringify(first.userOp)}::jsonb, 'failed', 'rejected', 1, now())`
      assert.isUndefined(yield* repo.storeOrShare(buildOf(accountId, signer, hash, "send:1")))
      assert.strictEqual(yield* storedOf(hash), 3)
    }))
})
