/**
 * Group commit across accounts (docs/audit-log.md, "Group commit") against the real
 * PostgreSQL: appends of different accounts waiting at the same time go out in one
 * statement, `audit_append_accounts`, and share one transaction (one `xmin`). What an
 * attacker of that would try: a head held by someone else's long transaction (nobody else
 * may wait on it for long), an entry PostgreSQL refuses (it fails alone), the same
 * operation on two accounts in one statement (exactly one wins), and many accounts at once
 * (every chain unbroken, every caller its own entry).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"
import { assertContiguousAndVerified, holdHead, key, lockWaiters } from "./groupSupport.ts"
import { declined, executed, insertAccount } from "./support.ts"

const Live = AuditChain.layer.pipe(Layer.provideMerge(TestDatabaseLive({ maxConnections: 20 })))

/** How many transactions wrote these accounts' entries, and the most accounts one of them wrote. */
const transactions = (accounts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ accounts: number }>`
      SELECT count(DISTINCT account_id)::int AS accounts FROM audit_entries
      WHERE account_id IN ${sql.in(accounts)} GROUP BY xmin::text`
    return { count: rows.length, widest: Math.max(...rows.map((r) => r.accounts)) }
  }).pipe(Effect.orDie)

layer(Live, { excludeTestServices: true })("AuditChain group commit across accounts", (it) => {
  it.effect("40 accounts × 8 appends at once: shared statements, every chain unbroken, every caller its own entry", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const accounts = yield* Effect.forEach(Array.from({ length: 40 }), () => insertAccount())
      const inputs = accounts.flatMap((a, i) =>
        Array.from({ length: 8 }, (_, k) => (i + k) % 5 === 0 ? declined(a, `dec_x_${a}_${k}`) : executed(a, `op_x_${a}_${k}`))
      )
      const results = yield* Effect.all(inputs.map((input) => chain.append(input)), { concurrency: "unbounded" })
      results.forEach((r, i) => {
        assert.strictEqual(key(r), key(inputs[i]!))
        assert.strictEqual(r.accountId, inputs[i]!.accountId)
      })
      for (const a of accounts) {
        const entries = yield* assertContiguousAndVerified(a, 8)
        const byId = new Map(entries.map((e) => [e.id, e]))
        for (const r of results.filter((r) => r.accountId === a)) assert.deepStrictEqual(byId.get(r.id), r)
      }
      // They went together: far fewer transactions than entries, some holding many accounts.
      const t = yield* transactions(accounts)
      assert.isBelow(t.count, 320 / 2, `${t.count} transactions`)
      assert.isAbove(t.widest, 1)
    }))

  it.effect("a head held by a long transaction holds up nobody else; its own append lands once, after", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const held = yield* insertAccount()
      const others = yield* Effect.forEach(Array.from({ length: 12 }), () => insertAccount())
      const hold = yield* holdHead(held, `op_hold_${held}_0`)
      const blocked = yield* Effect.forkChild(chain.append(executed(held, `op_hold_${held}_1`)), { startImmediately: true })
      yield* lockWaiters(1)
      // While the head stays held, other accounts' appends (many rounds of them) complete.
      const started = Date.now()
      for (let round = 0; round < 3; round++) {
        const fibers = yield* Effect.forEach(others, (a) =>
          Effect.forkChild(chain.append(executed(a, `op_hold_${a}_${round}`)), { startImmediately: true }))
        // Some of them queue behind (or share a statement with) the held account's append.
        yield* Effect.forEach(fibers, Fiber.join)
      }
      assert.isBelow(Date.now() - started, 5_000, "the others waited on the held head")
      assert.isUndefined(blocked.pollUnsafe(), "the held account's append cannot have landed yet")
      yield* hold.release(true)
      const entry = yield* Fiber.join(blocked)
      const entries = yield* assertContiguousAndVerified(held, 2)
      assert.strictEqual(entries[1]!.id, entry.id)
      for (const a of others) yield* assertContiguousAndVerified(a, 3)
    }))

  it.effect("an entry PostgreSQL refuses fails alone; the other accounts of its statement land", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const accounts = yield* Effect.forEach(Array.from({ length: 10 }), () => insertAccount())
      // Keep the combiner busy so the rest wait and go out together.
      const first = yield* insertAccount()
      const hold = yield* holdHead(first, `op_bad_${first}_held`)
      const lead = yield* Effect.forkChild(chain.append(executed(first, `op_bad_${first}_0`)), { startImmediately: true })
      yield* lockWaiters(1)
      const inputs = accounts.map((a, i) =>
        i === 4
          // chain_id is an integer column: PostgreSQL refuses 2^40, failing the whole statement.
          ? executed(a, `op_bad_${a}_big`, { chainId: 2 ** 40 })
          : i === 7
          ? executed(a, `op_bad_${a}_nul`, { actor: "nul \u0000 byte" })
          : executed(a, `op_bad_${a}`)
      )
      const fibers = yield* Effect.forEach(inputs, (input) => Effect.forkChild(Effect.exit(chain.append(input)), { startImmediately: true }))
      yield* hold.release(true)
      yield* Fiber.join(lead)
      const exits = yield* Fiber.joinAll(fibers)
      exits.forEach((exit, i) => {
        if (i === 4 || i === 7) assert.isTrue(Exit.hasDies(exit), `input ${i} must die`)
        else assert.isTrue(Exit.isSuccess(exit), `input ${i}`)
      })
      for (const [i, a] of accounts.entries()) {
        if (i === 4 || i === 7) assert.deepStrictEqual(yield* chain.entries(a), [])
        else yield* assertContiguousAndVerified(a, 1)
      }
    }))

  it.effect("the same operation on many accounts at once: exactly one entry, every other caller told whose", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const accounts = yield* Effect.forEach(Array.from({ length: 16 }), () => insertAccount())
      const op = `op_same_${crypto.randomUUID()}`
      const exits = yield* Effect.all(accounts.map((a) => Effect.exit(chain.append(executed(a, op)))), {
        concurrency: "unbounded"
      })
      const won = exits.flatMap((e) => Exit.isSuccess(e) ? [e.value] : [])
      assert.strictEqual(won.length, 1)
      for (const exit of exits) {
        if (Exit.isSuccess(exit)) continue
        const error = Option.getOrThrow(Exit.findErrorOption(exit))
        assert.strictEqual(error._tag, "AuditDuplicate")
        assert.strictEqual(error.existingId, won[0]!.id)
      }
      for (const a of accounts) {
        if (a === won[0]!.accountId) yield* assertContiguousAndVerified(a, 1)
        else assert.deepStrictEqual(yield* chain.entries(a), [])
      }
    }))
})
