/**
 * The audit chain against the real PostgreSQL: real concurrency, real row locks.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { GENESIS_HASH, hashRecord } from "../../src/audit/Chain.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"
import { declined, executed, insertAccount } from "./support.ts"

const Live = AuditChain.layer.pipe(Layer.provideMerge(TestDatabaseLive({ maxConnections: 30 })))

layer(Live, { excludeTestServices: true })("AuditChain", (it) => {
  it.effect("appends link each entry to the previous one and count executed entries", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const a = yield* chain.append(executed(account, "op_a"))
      const b = yield* chain.append(declined(account, "dec_b"))
      const c = yield* chain.append(executed(account, "op_c", { txHash: undefined, status: "failed", declineReason: "reverted" }))
      const d = yield* chain.append(executed(account, "op_d"))
      assert.strictEqual(a.prevHash, GENESIS_HASH)
      assert.deepStrictEqual([a.index, b.index, c.index, d.index], [1, 2, 3, 4])
      assert.strictEqual(b.prevHash, a.hash)
      assert.strictEqual(c.prevHash, b.hash)
      assert.strictEqual(d.prevHash, c.hash)
      assert.deepStrictEqual([a.auditNonce, b.auditNonce, c.auditNonce, d.auditNonce], [1, null, null, 2])
      assert.deepStrictEqual([a.provenance, b.provenance, c.provenance], ["onchain", "offchain_only", "offchain_only"])
      assert.strictEqual(a.hash, hashRecord(a))
      // What is read back is exactly what was hashed.
      const stored = yield* chain.entries(account)
      assert.deepStrictEqual(stored, [a, b, c, d])
      const verdict = yield* chain.verify(account)
      assert.deepStrictEqual(verdict, { ok: true, length: 4, headHash: d.hash })
    }))

  it.effect("the hash the database computes is the documented one, for awkward text and numbers too", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      // Quotes, backslashes, control characters, non-BMP and line-separator code points,
      // numbers JSON writes in exponent form, and values that look like the cut markers.
      const awkward = [
        executed(account, "op_awk_1", { actor: `a "quoted" \\ back\\slash\n\t\u0001`, amount: 0.1 + 0.2 }),
        declined(account, "dec_awk_2", { declineReason: "emoji 🦊 and \u2028 separator é", amount: 1e21, token: undefined }),
        executed(account, "op_awk_3", { action: `"index":1,"prevHash":"0x00"`, amount: 1e-7, delegationId: undefined }),
        executed(account, "op_awk_4", { status: "failed", declineReason: "null", txHash: undefined, amount: undefined })
      ]
      const stored = []
      for (const input of awkward) stored.push(yield* chain.append(input))
      for (const e of stored) assert.strictEqual(e.hash, hashRecord(e), `entry ${e.index}`)
      assert.deepStrictEqual(yield* chain.entries(account), stored)
      assert.deepStrictEqual(yield* chain.verify(account), { ok: true, length: 4, headHash: stored[3]!.hash })
    }))

  it.effect("a second entry for the same operation is refused and writes nothing", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const first = yield* chain.append(executed(account, "op_dup_1"))
      const again = yield* chain.append(executed(account, "op_dup_1", { status: "failed" })).pipe(Effect.flip)
      assert.strictEqual(again._tag, "AuditDuplicate")
      assert.strictEqual(again.existingId, first.id)
      const declineAgain = yield* chain.append(declined(account, "dec_dup")).pipe(
        Effect.andThen(chain.append(declined(account, "dec_dup"))),
        Effect.flip
      )
      assert.strictEqual(declineAgain._tag, "AuditDuplicate")
      assert.strictEqual((yield* chain.entries(account)).length, 2)
      assert.isTrue((yield* chain.verify(account)).ok)
    }))

  it.effect("an append rolls back with the caller's transaction", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      yield* chain.append(executed(account, "op_kept"))
      const exit = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* chain.append(executed(account, "op_rolled_back"))
          // Verification inside the transaction sees the transaction's own chain.
          const inside = yield* chain.verify(account)
          assert.isTrue(inside.ok && inside.length === 2)
          return yield* Effect.fail("the state change failed" as const)
        })
      ).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      const entries = yield* chain.entries(account)
      assert.deepStrictEqual(entries.map((e) => e.operationId), ["op_kept"])
      // The head did not move either: the next append continues the chain.
      const next = yield* chain.append(executed(account, "op_after"))
      assert.strictEqual(next.index, 2)
      assert.strictEqual(next.auditNonce, 2)
      assert.isTrue((yield* chain.verify(account)).ok)
    }))

  it.effect("50 concurrent appenders on one account: one unbroken chain, no gaps, no duplicates", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const results = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        (i) => chain.append(i % 5 === 4 ? declined(account, `dec_c_${i}`) : executed(account, `op_c_${i}`)),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.length, 50)
      const entries = yield* chain.entries(account)
      assert.deepStrictEqual(entries.map((e) => e.index), Array.from({ length: 50 }, (_, i) => i + 1))
      const keys = entries.map((e) => e.operationId ?? e.declineId)
      assert.strictEqual(new Set(keys).size, 50)
      const nonces = entries.filter((e) => e.status === "executed").map((e) => e.auditNonce)
      assert.deepStrictEqual(nonces, Array.from({ length: 40 }, (_, i) => i + 1))
      for (let i = 1; i < entries.length; i++) assert.strictEqual(entries[i]!.prevHash, entries[i - 1]!.hash)
      assert.deepStrictEqual(yield* chain.verify(account), { ok: true, length: 50, headHash: entries[49]!.hash })
    }))

  it.effect("the same operation appended 20 times concurrently: exactly one wins", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const exits = yield* Effect.forEach(
        Array.from({ length: 20 }, () => executed(account, "op_race")),
        (input) => Effect.exit(chain.append(input)),
        { concurrency: "unbounded" }
      )
      const won = exits.filter(Exit.isSuccess)
      assert.strictEqual(won.length, 1)
      for (const e of exits) {
        if (Exit.isFailure(e)) {
          const error = Option.getOrThrow(Exit.findErrorOption(e))
          assert.strictEqual(error._tag, "AuditDuplicate")
          assert.strictEqual(error.existingId, won[0]!.value.id)
        }
      }
      assert.strictEqual((yield* chain.entries(account)).length, 1)
    }))

  it.effect("appends on different accounts do not wait on each other", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const chain = yield* AuditChain
      const held = yield* insertAccount()
      const other = yield* insertAccount()
      yield* chain.append(executed(held, "op_h0"))
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // An open transaction that has appended to `held` and keeps its head row locked.
      const holder = yield* sql.withTransaction(
        Effect.gen(function*() {
          yield* chain.append(executed(held, "op_h1"))
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        })
      ).pipe(Effect.forkChild)
      yield* Deferred.await(locked)

      // Another account's appends complete while the lock is held...
      const started = Date.now()
      for (let i = 0; i < 5; i++) {
        yield* chain.append(executed(other, `op_o${i}`)).pipe(Effect.timeout(Duration.seconds(2)))
      }
      const otherMs = Date.now() - started
      // ...while an append on the held account waits for it.
      const blocked = yield* chain.append(executed(held, "op_h2")).pipe(Effect.forkChild)
      yield* Effect.sleep(Duration.millis(300))
      assert.isUndefined(blocked.pollUnsafe(), "an append on the locked account must wait")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      const after = yield* Fiber.join(blocked)
      assert.strictEqual(after.index, 3)
      assert.isBelow(otherMs, 2000)
      assert.isTrue((yield* chain.verify(held)).ok)
      assert.isTrue((yield* chain.verify(other)).ok)
    }))

  describe("validation", () => {
    it.effect("an entry names exactly one of operation and decline id, and is valid on the wire", () =>
      Effect.gen(function*() {
        const chain = yield* AuditChain
        const account = yield* insertAccount()
        const exit = yield* chain.append(executed(account, "op_x", { declineId: "dec_x" })).pipe(Effect.exit)
        assert.isTrue(Exit.hasDies(exit))
        const noReason = yield* chain.append(declined(account, "dec_y", { declineReason: undefined })).pipe(Effect.exit)
        assert.isTrue(Exit.hasDies(noReason))
        const badHash = yield* chain.append(executed(account, "op_z", { txHash: "0x1234" })).pipe(Effect.exit)
        assert.isTrue(Exit.hasDies(badHash))
        assert.strictEqual((yield* chain.entries(account)).length, 0)
      }))
  })
})
