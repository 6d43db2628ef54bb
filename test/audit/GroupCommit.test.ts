/**
 * Group commit of audit appends (docs/audit-log.md, "Group commit") against the real
 * PostgreSQL: appends outside a transaction that arrive while one is in flight for the
 * same account are written together by `audit_append_many`. Entries written by one
 * statement share one transaction, so `xmin` shows which entries went together.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { type AppendInput, AuditChain, MAX_BATCH } from "../../src/audit/AuditChain.ts"
import { hashRecord } from "../../src/audit/Chain.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"
import { assertContiguousAndVerified, batchSizes, holdHead, key, lockWaiters } from "./groupSupport.ts"
import { declined, executed, insertAccount } from "./support.ts"

const Live = AuditChain.layer.pipe(Layer.provideMerge(TestDatabaseLive({ maxConnections: 20 })))

layer(Live, { excludeTestServices: true })("AuditChain group commit", (it) => {
  it.effect("200 concurrent appends on one account: batched, one unbroken chain, each caller gets its own entry", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const inputs = Array.from({ length: 200 }, (_, i) =>
        i % 7 === 3 ? declined(account, `dec_gc_${account}_${i}`) : executed(account, `op_gc_${account}_${i}`))
      const results = yield* Effect.all(inputs.map((input) => chain.append(input)), { concurrency: "unbounded" })
      // Every caller got the entry of its own input back, as stored.
      results.forEach((r, i) => assert.strictEqual(key(r), key(inputs[i]!)))
      assert.strictEqual(new Set(results.map((r) => r.id)).size, 200)
      const entries = yield* assertContiguousAndVerified(account, 200)
      const byId = new Map(entries.map((e) => [e.id, e]))
      for (const r of results) assert.deepStrictEqual(byId.get(r.id), r)
      // They really went together, and no statement wrote more than the bound.
      const sizes = yield* batchSizes(account)
      assert.isBelow(sizes.length, 200, `batches ${sizes.join(",")}`)
      assert.isAtMost(Math.max(...sizes), MAX_BATCH)
    }))

  it.effect("duplicates in a batch fail alone, with the holder's id; the rest of the batch lands", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const before = yield* chain.append(executed(account, `op_dupb_${account}_old`))
      const oldDecline = yield* chain.append(declined(account, `dec_dupb_${account}_old`))
      // Hold the head so everything below queues and goes out in batches.
      const held = yield* holdHead(account, `op_dupb_${account}_held`)
      const inputs: Array<AppendInput> = []
      for (let i = 0; i < 40; i++) {
        if (i % 10 === 2) inputs.push(executed(account, `op_dupb_${account}_old`)) // already in the table
        else if (i % 10 === 5) inputs.push(declined(account, `dec_dupb_${account}_old`)) // already in the table
        else if (i % 10 === 7) inputs.push(executed(account, `op_dupb_${account}_${i - 1}`)) // earlier in this batch
        else if (i % 10 === 8) inputs.push(executed(account, `op_dupb_${account}_held`)) // held by the open transaction
        else inputs.push(executed(account, `op_dupb_${account}_${i}`))
      }
      const fibers = yield* Effect.forEach(inputs, (input) => Effect.forkChild(Effect.exit(chain.append(input)), { startImmediately: true }))
      yield* held.release(true)
      const exits = yield* Fiber.joinAll(fibers)
      const entries = yield* assertContiguousAndVerified(account, 3 + 24)
      const holder = new Map(entries.map((e) => [key(e), e.id]))
      exits.forEach((exit, i) => {
        const input = inputs[i]!
        if (i % 10 === 2 || i % 10 === 5 || i % 10 === 7 || i % 10 === 8) {
          const error = Option.getOrThrow(Exit.findErrorOption(exit))
          assert.strictEqual(error._tag, "AuditDuplicate", `input ${i}`)
          assert.strictEqual(error.existingId, holder.get(key(input)))
        } else {
          assert.isTrue(Exit.isSuccess(exit), `input ${i}`)
        }
      })
      assert.strictEqual(entries[0]!.id, before.id)
      assert.strictEqual(entries[1]!.id, oldDecline.id)
      assert.strictEqual(entries[2]!.id, held.entry.id)
      // The 24 entries went out in statements of more than one entry.
      const sizes = yield* batchSizes(account)
      assert.isBelow(sizes.length - 3, 24, `batches ${sizes.join(",")}`)
    }))

  it.effect("FIFO per account: queued appends take their places in arrival order", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const held = yield* holdHead(account, `op_fifo_${account}_held`)
      const fibers = []
      for (let i = 0; i < 30; i++) {
        fibers.push(yield* Effect.forkChild(chain.append(executed(account, `op_fifo_${account}_${i}`)), { startImmediately: true }))
      }
      yield* held.release(true)
      yield* Fiber.joinAll(fibers)
      const entries = yield* assertContiguousAndVerified(account, 31)
      assert.deepStrictEqual(
        entries.slice(1).map((e) => e.operationId),
        Array.from({ length: 30 }, (_, i) => `op_fifo_${account}_${i}`)
      )
    }))

  it.effect("an append in a transaction that rolls back leaves nothing; batched appends beside it land and verify", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      yield* chain.append(executed(account, `op_rb_${account}_first`))
      const held = yield* holdHead(account, `op_rb_${account}_rolled_back`)
      const outside = yield* Effect.forEach(
        Array.from({ length: 30 }, (_, i) => executed(account, `op_rb_${account}_${i}`)),
        (input) => Effect.forkChild(chain.append(input), { startImmediately: true })
      )
      // Another transaction's append on the same account, committed: never batched with others.
      const committed = yield* sql.withTransaction(chain.append(executed(account, `op_rb_${account}_committed`))).pipe(
        Effect.forkChild({ startImmediately: true })
      )
      const rolledBack = yield* held.release(false)
      assert.isTrue(Exit.isFailure(rolledBack))
      yield* Fiber.joinAll(outside)
      const own = yield* Fiber.join(committed)
      const entries = yield* assertContiguousAndVerified(account, 32)
      assert.isFalse(entries.some((e) => e.operationId === `op_rb_${account}_rolled_back`))
      // The in-transaction entry committed alone.
      const sizes = yield* batchSizes(account)
      const position = entries.findIndex((e) => e.id === own.id)
      let seen = 0
      const alone = sizes.some((n) => {
        seen += n
        return n === 1 && seen - 1 === position
      })
      assert.isTrue(alone, `batches ${sizes.join(",")}, the transaction's entry at ${position}`)
    }))

  it.effect("a NUL and an entry PostgreSQL refuses fail alone; the rest of their batch lands", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const held = yield* holdHead(account, `op_awk_${account}_held`)
      const awkward = [
        executed(account, `op_awkb_${account}_1`, { actor: `a "quoted" \\ back\\slash\n\t\u0001 {x,y} NULL`, amount: 0.1 + 0.2 }),
        declined(account, `dec_awkb_${account}_2`, { declineReason: "emoji 🦊 and \u2028 separator é", amount: 1e21, token: undefined }),
        executed(account, `op_awkb_${account}_3`, { action: `"index":1,"prevHash":"0x00"`, amount: 1e-7, delegationId: undefined }),
        executed(account, `op_awkb_${account}_4`, { status: "failed", declineReason: "null", txHash: undefined, amount: undefined }),
        executed(account, `op_awkb_${account}_5`, { token: "NULL", recipient: "\"}", amount: -0.5, delegationId: "" }),
        executed(account, `op_awkb_${account}_nul`, { actor: "nul \u0000 byte" }),
        executed(account, `op_awkb_${account}_6`, { amount: Number.MAX_VALUE, recipient: "0x3333333333333333333333333333333333333333" }),
        // chain_id is an integer column: PostgreSQL refuses this value, failing the batch statement.
        executed(account, `op_awkb_${account}_big`, { chainId: 2 ** 40 }),
        executed(account, `op_awkb_${account}_7`, { amount: 5e-324, actor: "\\\\\"\"" })
      ]
      const fibers = yield* Effect.forEach(awkward, (input) => Effect.forkChild(Effect.exit(chain.append(input)), { startImmediately: true }))
      yield* held.release(true)
      const exits = yield* Fiber.joinAll(fibers)
      exits.forEach((exit, i) => {
        const id = awkward[i]!.operationId ?? ""
        if (id.endsWith("_nul") || id.endsWith("_big")) assert.isTrue(Exit.hasDies(exit), `input ${i} must die`)
        else assert.isTrue(Exit.isSuccess(exit), `input ${i}`)
      })
      const stored = exits.flatMap((e) => Exit.isSuccess(e) ? [e.value] : [])
      for (const e of stored) assert.strictEqual(e.hash, hashRecord(e), `entry ${e.index}`)
      const entries = yield* assertContiguousAndVerified(account, 1 + 7)
      // What is read back is exactly what was hashed.
      assert.deepStrictEqual(entries.slice(1), stored)
    }))

  it.effect("awkward text and numbers in one batched statement hash as hashRecord", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const held = yield* holdHead(account, `op_one_${account}_held`)
      // The existing awkward values, and what an array literal must carry through: braces,
      // commas, quotes, backslashes, the text NULL, empty text, extreme doubles.
      const awkward = [
        executed(account, `op_one_${account}_1`, { actor: `a "quoted" \\ back\\slash\n\t\u0001 {x,y} NULL`, amount: 0.1 + 0.2 }),
        declined(account, `dec_one_${account}_2`, { declineReason: "emoji 🦊 and \u2028 separator é", amount: 1e21, token: undefined }),
        executed(account, `op_one_${account}_3`, { action: `"index":1,"prevHash":"0x00"`, amount: 1e-7, delegationId: undefined }),
        executed(account, `op_one_${account}_4`, { status: "failed", declineReason: "null", txHash: undefined, amount: undefined }),
        executed(account, `op_one_${account}_5`, { token: "NULL", recipient: "\"}", amount: -0.5, delegationId: "" }),
        executed(account, `op_one_${account}_6`, { amount: Number.MAX_VALUE, recipient: "0x3333333333333333333333333333333333333333" }),
        executed(account, `op_one_${account}_7`, { amount: 5e-324, actor: "\\\\\"\"", action: " padded " })
      ]
      // Each caller queues at once (startImmediately): all behind the held lock.
      const fibers = yield* Effect.forEach(awkward, (input) => Effect.forkChild(chain.append(input), { startImmediately: true }))
      yield* held.release(true)
      const stored = yield* Fiber.joinAll(fibers)
      for (const e of stored) assert.strictEqual(e.hash, hashRecord(e), `entry ${e.index}`)
      // What is read back is exactly what was hashed, in arrival order.
      assert.deepStrictEqual((yield* assertContiguousAndVerified(account, 1 + awkward.length)).slice(1), stored)
      // They were written by one statement (at most the first went ahead alone).
      const sizes = yield* batchSizes(account)
      assert.isTrue(sizes.slice(1).some((n) => n >= awkward.length - 1), `batches ${sizes.join(",")}`)
    }))

  it.effect("an interrupted queued caller: not yet taken, its entry is never written; taken, it is written once", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const other = yield* insertAccount()
      // Another account's open transaction holds operation id `shared`, uncommitted: an
      // insert of the same id waits for it (and lands once it rolls back).
      const shared = `op_int_${account}_x`
      const blocker = yield* holdHead(other, shared)
      const first = yield* holdHead(account, `op_int_${account}_a`)
      // W finds the account idle and writes itself: it waits for the head lock...
      const w = yield* Effect.forkChild(chain.append(executed(account, `op_int_${account}_w`)), { startImmediately: true })
      yield* lockWaiters(1)
      // ...and X queues behind it.
      const x = yield* Effect.forkChild(chain.append(executed(account, shared)), { startImmediately: true })
      // W goes through; the account's writer takes X, whose insert waits for the blocker.
      yield* first.release(true)
      yield* Fiber.join(w)
      yield* lockWaiters(1)
      // Y and Z queue behind X. X (taken) and Y (queued) lose their callers.
      const y = yield* Effect.forkChild(chain.append(executed(account, `op_int_${account}_y`)), { startImmediately: true })
      const z = yield* Effect.forkChild(chain.append(executed(account, `op_int_${account}_z`)), { startImmediately: true })
      yield* Fiber.interrupt(y)
      yield* Fiber.interrupt(x)
      yield* blocker.release(false)
      const zEntry = yield* Fiber.join(z)
      const entries = yield* assertContiguousAndVerified(account, 4)
      assert.deepStrictEqual(entries.map((e) => e.operationId), [
        `op_int_${account}_a`,
        `op_int_${account}_w`,
        shared,
        `op_int_${account}_z`
      ])
      assert.strictEqual(entries[3]!.id, zEntry.id)
      // X's caller did not see it, but it is there: appending it again is a duplicate of it.
      const again = yield* chain.append(executed(account, shared)).pipe(Effect.flip)
      assert.strictEqual(again.existingId, entries[2]!.id)
      // Y was never written: appending it now lands.
      const yLater = yield* chain.append(executed(account, `op_int_${account}_y`))
      assert.strictEqual(yLater.index, 5)
    }))

  it.effect("an interrupted caller that was writing its own entry does not strand the ones queued behind it", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const account = yield* insertAccount()
      const held = yield* holdHead(account, `op_lead_${account}_held`)
      const w = yield* Effect.forkChild(chain.append(executed(account, `op_lead_${account}_w`)), { startImmediately: true })
      yield* lockWaiters(1)
      const queued = yield* Effect.forEach(
        Array.from({ length: 10 }, (_, i) => executed(account, `op_lead_${account}_${i}`)),
        (input) => Effect.forkChild(chain.append(input), { startImmediately: true })
      )
      // W's statement is cancelled (or, if it got through first, kept): never twice.
      yield* Fiber.interrupt(w)
      yield* held.release(true)
      yield* Fiber.joinAll(queued)
      const entries = yield* chain.entries(account)
      const wWritten = entries.some((e) => e.operationId === `op_lead_${account}_w`)
      yield* assertContiguousAndVerified(account, 11 + (wWritten ? 1 : 0))
      assert.deepStrictEqual(
        entries.filter((e) => e.operationId !== `op_lead_${account}_w`).slice(1).map((e) => e.operationId),
        Array.from({ length: 10 }, (_, i) => `op_lead_${account}_${i}`)
      )
    }))
})
