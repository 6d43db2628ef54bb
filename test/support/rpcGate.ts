/**
 * A loopback JSON-RPC gate for tests that prove a lock is never held across a chain call: the
 * service reads the chain through it, and it holds the reads a test names while the test tries
 * the rows from its own connection (NOWAIT) and looks for a transaction left open.
 */
import { assert } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import * as http from "node:http"

/** A JSON-RPC pass-through to `target` that holds, while `hold` is set, each request it matches until `release`. */
export const rpcGate = (target: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{
        readonly url: string
        hold(match: (body: string) => boolean): void
        release(): void
        held(): number
        /** Requests seen so far (held or not) whose body `match`es. */
        seen(match: (body: string) => boolean): number
        close(): void
      }>((resolve) => {
        let match: ((body: string) => boolean) | undefined
        let waiting: Array<() => void> = []
        let heldCount = 0
        const bodies: Array<string> = []
        const server = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", async () => {
            const body = Buffer.concat(chunks).toString()
            bodies.push(body)
            if (match !== undefined && match(body)) {
              heldCount++
              await new Promise<void>((r) => waiting.push(r))
            }
            try {
              const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body })
              res.writeHead(answer.status, { "content-type": "application/json" })
              res.end(await answer.text())
            } catch {
              req.socket.destroy()
            }
          })
        })
        const release = () => {
          match = undefined
          for (const r of waiting) r()
          waiting = []
        }
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as { port: number }
          resolve({
            url: `http://127.0.0.1:${port}`,
            hold: (m) => void (match = m),
            release,
            held: () => heldCount,
            seen: (m) => bodies.filter(m).length,
            close: () => {
              release()
              server.closeAllConnections()
              server.close()
            }
          })
        })
      })
    ),
    (gate) => Effect.sync(() => gate.close())
  )

/** Waits (up to 20 s) until the gate holds a request. */
export const untilHeld = (held: () => number, before: number, what = "the enforcers' state") =>
  Effect.gen(function*() {
    for (let i = 0; i < 400 && held() === before; i++) yield* Effect.sleep("50 millis")
    assert.isAbove(held(), before, `${what} was never read through the gate`)
  })

/** The SQLSTATE of a failed statement, from the driver's error in the cause chain. */
const sqlState = (e: unknown): string | undefined => {
  for (let c = e as { code?: unknown; cause?: unknown } | undefined, i = 0; c !== undefined && c !== null && i < 6; c = c.cause as typeof c, i++) {
    if (typeof c.code === "string" && /^[0-9A-Z]{5}$/.test(c.code)) return c.code
  }
  return undefined
}

/** Tables whose rows a test tries to lock, with the column that names a row. */
export type Locked = "delegations" | "approval_requests" | "user_operations" | "audit_heads"
const keyOf = (table: Locked) => table === "audit_heads" ? "account_id" : "id"

/** A row's lock (a grant's by default), tried from another connection without waiting: true when it was free. */
export const rowLockFree = (id: string, table: Locked = "delegations") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(sql`SELECT 1 FROM ${sql(table)} WHERE ${sql(keyOf(table))} = ${id} FOR UPDATE NOWAIT`).pipe(
      Effect.as(true),
      Effect.catchTag("SqlError", (e) => {
        // 55P03 lock_not_available: another transaction holds the row (any other error is the test's own).
        assert.strictEqual(sqlState(e), "55P03", String(e))
        return Effect.succeed(false)
      })
    ))

/**
 * No transaction of the service is left open (idle in one, waiting): seen at least once within a
 * second, as the background loops' short transactions come and go.
 */
export const noOpenTransaction = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.gen(function*() {
    for (let i = 0; i < 20; i++) {
      const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`
      if (row!.n === 0) return true
      yield* Effect.sleep("50 millis")
    }
    return false
  }).pipe(Effect.orDie))

export type Gate = Effect.Success<ReturnType<typeof rpcGate>>

/**
 * Runs `request` with the gate holding the chain reads `match` names; once one is held, checks
 * that `what` left the row `id` unlocked and no transaction open, then lets the reads go and
 * answers what the request answers.
 */
export const heldAndUnlocked = <A, E, R>(gate: Gate, match: (body: string) => boolean, request: Effect.Effect<A, E, R>, what: string, id: string, table?: Locked) =>
  Effect.gen(function*() {
    const before = gate.held()
    gate.hold(match)
    const fiber = yield* Effect.forkChild(request)
    yield* untilHeld(gate.held, before)
    assert.isTrue(yield* rowLockFree(id, table), `${what} held the row lock across its chain read`)
    assert.isTrue(yield* noOpenTransaction, `${what} held a transaction open across its chain read`)
    gate.release()
    return yield* Fiber.join(fiber)
  })
