/** What the group-commit tests share: holding a head, watching lock waits and batches, checking chains. */
import { assert } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { hashRecord, type StoredEntry } from "../../src/audit/Chain.ts"
import { executed } from "./support.ts"

/** Entries per writing transaction, in chain order of their first entry. */
export const batchSizes = (accountId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM audit_entries WHERE account_id = ${accountId}
      GROUP BY xmin::text ORDER BY min(chain_index)`
    return rows.map((r) => r.n)
  }).pipe(Effect.orDie)

/**
 * Holds the account's head lock: an open transaction that has appended `operationId`
 * (inside it, so not batched). `release(commit)` ends it.
 */
export const holdHead = (accountId: string, operationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const chain = yield* AuditChain
    const locked = yield* Deferred.make<StoredEntry>()
    const release = yield* Deferred.make<boolean>()
    const fiber = yield* sql.withTransaction(
      Effect.gen(function*() {
        yield* Deferred.succeed(locked, yield* chain.append(executed(accountId, operationId)))
        if (!(yield* Deferred.await(release))) return yield* Effect.fail("rolled back" as const)
      })
    ).pipe(Effect.exit, Effect.forkDetach)
    const entry = yield* Deferred.await(locked)
    return {
      entry,
      release: (commit: boolean) => Deferred.succeed(release, commit).pipe(Effect.andThen(Fiber.join(fiber)))
    }
  })

/** Waits until `n` statements of this database wait for a lock (the held head, here). */
export const lockWaiters = (n: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (let i = 0; i < 500; i++) {
      const [row] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`
      if (row!.n >= n) return
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.die(new Error(`fewer than ${n} statements wait for a lock`))
  }).pipe(Effect.orDie)

export const key = (e: { readonly operationId?: string | null | undefined; readonly declineId?: string | null | undefined }) =>
  e.operationId ?? e.declineId

export const assertContiguousAndVerified = (accountId: string, length: number) =>
  Effect.gen(function*() {
    const chain = yield* AuditChain
    const entries = yield* chain.entries(accountId)
    assert.deepStrictEqual(entries.map((e) => e.index), Array.from({ length }, (_, i) => i + 1))
    for (const e of entries) assert.strictEqual(e.hash, hashRecord(e), `entry ${e.index}`)
    const executedNonces = entries.filter((e) => e.status === "executed").map((e) => e.auditNonce)
    assert.deepStrictEqual(executedNonces, executedNonces.map((_, i) => i + 1))
    assert.deepStrictEqual(yield* chain.verify(accountId), { ok: true, length, headHash: entries[length - 1]!.hash })
    return entries
  })
