/**
 * Lock order between the follower's pass and a relay settlement: an operation's row is
 * always locked before any audit head. A settlement moves its operation's row, then
 * appends to the account's log (its head). The pass settles several operations in one
 * transaction, so it locks the rows of every operation it may settle before its first
 * append: it never holds a head while it waits for a row. Before, it settled the first of
 * an account's two operations (holding the account's head) and then waited for the second
 * one's row, which a settlement held while it waited for that head: a deadlock, broken by
 * PostgreSQL after a second (`deadlock_timeout`) and run again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import type { Hash } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { ADVISORY_KEY } from "../../src/follower/Follower.ts"
import { startInstance } from "../support/TestServer.ts"
import { awaitWaiter, ensureAuditHead, holding } from "../support/locks.ts"
import { waitFor } from "../support/waitFor.ts"
import { cursorOf } from "./support.ts"
import { signBuild } from "../userops/helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("chain follower: lock order", () => {
  it.live("the pass holds no audit head while it waits for an operation's row", () =>
    Effect.gen(function*() {
      // The reconciler's first pass runs at start (nothing to settle yet) and not again; no poll.
      const service = yield* startInstance({ config: { FOLLOWER_INTERVAL: "100 millis", RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds" } })
      const { sql } = service
      const chainId = yield* Effect.promise(() => service.chain.client.getChainId())
      yield* waitFor("the follower's first pass", cursorOf(sql, chainId))
      // No pass until the two operations below are on chain.
      const resumeFollower = yield* holding(sql, sql`SELECT pg_advisory_xact_lock(${ADVISORY_KEY}, ${chainId})`)

      const key = generatePrivateKey()
      const session = yield* signIn(service.baseUrl, privateKeyToAccount(key))
      const accountId = session.accounts[0]!.id
      const api = yield* makeClient({ baseUrl: service.baseUrl, token: session.token })
      // Two operations of one account on chain, both still `submitted` here (the second built
      // once the first is on chain, so it takes the next nonce).
      const submitOne = Effect.gen(function*() {
        const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        const receipt = yield* api.userops.submit({ payload: yield* signBuild(build, key) })
        yield* waitFor("inclusion", service.bundler.getUserOperationReceipt(receipt.userOpHash as Hash).pipe(
          Effect.orDie,
          Effect.map((r) => r ?? undefined)
        ))
        return receipt.userOpId
      })
      const first = yield* submitOne
      const second = yield* submitOne
      const statuses = sql<{ status: string }>`SELECT status FROM user_operations WHERE id IN ${sql.in([first, second])}`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map((r) => r.status))
      )
      assert.deepStrictEqual(yield* statuses, ["submitted", "submitted"])

      // A settlement of the second operation, under way: its row moved, its append next.
      yield* ensureAuditHead(sql, accountId)
      const rowHeld = yield* Deferred.make<void>()
      const settlement = sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT id FROM user_operations WHERE id = ${second} FOR UPDATE`
        yield* Deferred.succeed(rowHeld, undefined)
        yield* awaitWaiter(sql, "the follower (for the operation's row)")
        // Well under `deadlock_timeout`: a head the pass holds makes this fail, not PostgreSQL's check.
        yield* sql`SET LOCAL lock_timeout = '500ms'`
        yield* sql`SELECT account_id FROM audit_heads WHERE account_id = ${accountId} FOR UPDATE`
      }))
      const settling = yield* Effect.forkChild(Effect.exit(settlement))
      yield* Deferred.await(rowHeld)
      yield* resumeFollower

      const settled = yield* Fiber.join(settling)
      assert.isTrue(
        Exit.isSuccess(settled),
        `the settlement took the account's head while the pass waited: ${Exit.isFailure(settled) ? String(settled.cause) : ""}`
      )
      // Then the pass settles both, one entry each.
      yield* waitFor("both settled", statuses.pipe(Effect.map((s) => (s.includes("submitted") ? undefined : s))))
      const entries = yield* sql<{ operation_id: string }>`
        SELECT operation_id FROM audit_entries WHERE operation_id IN ${sql.in([first, second])} ORDER BY operation_id`
      assert.deepStrictEqual(entries.map((e) => e.operation_id), [first, second].sort())
      yield* service.stop
    }), { timeout: 90_000 })
})
