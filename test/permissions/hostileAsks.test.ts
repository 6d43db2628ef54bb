/**
 * An agent's asks sent at once (`POST /permissions/asks`, MCP `request_permission`), against the
 * real PostgreSQL: one pending ask per agent and owner holds when ten are stored together (before,
 * `ask` read "none pending" and then built the grant for seconds before storing it: two asks in that
 * window were both stored). The check here and its insert share one lock of the pair; at this level
 * the race's window is too narrow to show without it. The pair's lock is per pair: another
 * owner or another agent is not held back, and an ask no longer pending (expired, rejected) does
 * not block a new one.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PermissionRepo } from "../../src/permissions/PermissionRepo.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"

const Live = PermissionRepo.layer.pipe(Layer.provideMerge(TestDatabaseLive({ maxConnections: 12 })))

const hex = () => `0x${crypto.randomUUID().replace(/-/g, "").padEnd(40, "0")}`
const askOf = (agent: string, owner: string, expiresAt = new Date(Date.now() + 3_600_000)) => ({
  id: `pap_${crypto.randomUUID()}`,
  signerAddress: owner,
  kind: "grant" as const,
  items: [],
  expiresAt,
  requestedBy: agent
})
const stored = (agent: string, owner: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`SELECT id FROM permission_approvals WHERE requested_by = ${agent} AND signer_address = ${owner}`).pipe(Effect.orDie)

layer(Live, { excludeTestServices: true })("an agent's asks at once", (it) => {
  it.effect("ten asks of one owner at once: one stored, nine answered with its id", () =>
    Effect.gen(function*() {
      const repo = yield* PermissionRepo
      const [agent, owner] = [hex(), hex()]
      const asks = Array.from({ length: 10 }, () => askOf(agent, owner))
      const answers = yield* Effect.forEach(asks, (a) => repo.insertAsk(a), { concurrency: "unbounded" })
      const rows = yield* stored(agent, owner)
      assert.strictEqual(rows.length, 1)
      const winner = rows[0]!.id
      assert.strictEqual(answers.filter((a) => a === undefined).length, 1)
      assert.deepStrictEqual(answers.filter((a) => a !== undefined), Array.from({ length: 9 }, () => ({ pending: winner })))
      // The winner is one of the ten asked, stored as asked.
      assert.include(asks.map((a) => a.id), winner)
    }))

  it.effect("other pairs are not held back; an ask no longer pending does not block a new one", () =>
    Effect.gen(function*() {
      const repo = yield* PermissionRepo
      const sql = yield* SqlClient.SqlClient
      const [agent, other, owner, owner2] = [hex(), hex(), hex(), hex()]
      const answers = yield* Effect.all([
        repo.insertAsk(askOf(agent, owner)),
        repo.insertAsk(askOf(agent, owner2)),
        repo.insertAsk(askOf(other, owner))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(answers, [undefined, undefined, undefined])
      // Expired: a new ask is stored.
      const old = askOf(hex(), owner)
      yield* repo.insertAsk({ ...old, expiresAt: new Date(Date.now() - 1000) })
      assert.isUndefined(yield* repo.insertAsk(askOf(old.requestedBy, owner)))
      // Rejected: a new ask is stored.
      const [first] = yield* stored(agent, owner)
      yield* sql`UPDATE permission_approvals SET status = 'rejected' WHERE id = ${first!.id}`.pipe(Effect.orDie)
      assert.isUndefined(yield* repo.insertAsk(askOf(agent, owner)))
      assert.strictEqual((yield* stored(agent, owner)).length, 2)
    }))
})
