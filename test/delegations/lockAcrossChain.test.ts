/**
 * The grant's row lock is never held across a chain call. Every reservation reads the enforcers'
 * state from the chain (what the delegate spent around the service) and the grant's ledger under
 * its row lock; were the chain read made under the lock, a slow or hanging node would hold every
 * other action, payment and relay of the grant behind it. The service reads the chain here
 * through a loopback JSON-RPC gate that holds the enforcers' state read (`callCounts` of the
 * LimitedCallsEnforcer, the first of them) while the test tries the grant's row lock with NOWAIT
 * from its own connection, and looks for any transaction of the service left open meanwhile: for
 * a new action (its build), for its relay (the submit-time re-check, a staged policy check that
 * reads the chain before the relay's transaction) and for an action an approval rule holds back
 * (its reservation); and for an approved request past its deadline, which asks the chain whether
 * the agent spent it before it expires it (the request's row). Each then finishes as usual.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as http from "node:http"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { mint, testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { approvalGrant, keyAddress, signApproval } from "../approvals/support.ts"
import { enabled, failure, newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

/** A JSON-RPC pass-through to `target` that holds, while `hold` is set, each request it matches until `release`. */
const rpcGate = (target: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{
        readonly url: string
        hold(match: (body: string) => boolean): void
        release(): void
        held(): number
        close(): void
      }>((resolve) => {
        let match: ((body: string) => boolean) | undefined
        let waiting: Array<() => void> = []
        let heldCount = 0
        const server = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", async () => {
            const body = Buffer.concat(chunks).toString()
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
const untilHeld = (held: () => number, before: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400 && held() === before; i++) yield* Effect.sleep("50 millis")
    assert.isAbove(held(), before, "the enforcers' state was never read through the gate")
  })

/** The SQLSTATE of a failed statement, from the driver's error in the cause chain. */
const sqlState = (e: unknown): string | undefined => {
  for (let c = e as { code?: unknown; cause?: unknown } | undefined, i = 0; c !== undefined && c !== null && i < 6; c = c.cause as typeof c, i++) {
    if (typeof c.code === "string" && /^[0-9A-Z]{5}$/.test(c.code)) return c.code
  }
  return undefined
}

/** A row's lock (a grant's by default), tried from another connection without waiting: true when it was free. */
const rowLockFree = (id: string, table: "delegations" | "approval_requests" = "delegations") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(sql`SELECT id FROM ${sql(table)} WHERE id = ${id} FOR UPDATE NOWAIT`).pipe(
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
const noOpenTransaction = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.gen(function*() {
    for (let i = 0; i < 20; i++) {
      const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`
      if (row!.n === 0) return true
      yield* Effect.sleep("50 millis")
    }
    return false
  }).pipe(Effect.orDie))

type Gate = Effect.Success<ReturnType<typeof rpcGate>>

/**
 * Runs `request` with the gate holding the chain reads `match` names; once one is held, checks
 * that `what` left the row `id` unlocked and no transaction open, then lets the reads go and
 * answers what the request answers.
 */
const heldAndUnlocked = <A, E, R>(gate: Gate, match: (body: string) => boolean, request: Effect.Effect<A, E, R>, what: string, id: string, table?: "approval_requests") =>
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

describe("row locks and the chain", () => {
  it.live("a new action and its relay read the enforcers' state with the grant unlocked", () =>
    Effect.gen(function*() {
      const gate = yield* rpcGate(testNetwork().rpcUrl)
      const context = yield* Layer.build(TestServerLive({ chain: { rpcUrl: gate.url } }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const limited = net.delegation.caveatEnforcers["LimitedCallsEnforcer"]!.toLowerCase()
        // The enforcers' state read: a call of the LimitedCallsEnforcer (its `callCounts`).
        const stateRead = (body: string) => body.includes("eth_call") && body.toLowerCase().includes(limited)
        const owner = yield* newSession()
        const delegate = yield* newSession()
        yield* mint("usd", owner.account.address as Hex, 20)
        const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 5, maxActions: 3 })
        const recipient = privateKeyToAccount(generatePrivateKey()).address

        // The action: its build reads the chain with the grant's row free.
        const action = yield* heldAndUnlocked(
          gate,
          stateRead,
          delegate.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 2 } }),
          "the action",
          created.id
        )

        // Its relay: the submit-time re-check reads the chain with the grant's row free, and before
        // the relay's own transaction (its stored operation's row) begins.
        const signed = yield* signOp(delegate.key, action.userOp)
        const receipt = yield* heldAndUnlocked(gate, stateRead, relay(delegate.api, signed), "the relay's re-check", created.id)
        assert.strictEqual(receipt.outcome, "mined", JSON.stringify(receipt))

        // An action above an approval rule's threshold: reserved (`reserveFor`) while its request
        // opens; its chain read too leaves the grant's row free.
        const approver = yield* newSession()
        const ruled = yield* approvalGrant(owner, delegate, 10, { required: 1, approvers: [keyAddress(approver)], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })
        const asked = yield* heldAndUnlocked(
          gate,
          stateRead,
          failure(delegate.api.delegations.act({ params: { delegationId: ruled.id }, payload: { recipient, amount: 3 } })),
          "the approval path",
          ruled.id
        )
        assert.strictEqual(asked.reason, "approval_required", JSON.stringify(asked))
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped), 120_000)

  it.live("an approved request past its deadline asks the chain whether the agent spent it with its row unlocked", () =>
    Effect.gen(function*() {
      const gate = yield* rpcGate(testNetwork().rpcUrl)
      // A short deadline; no sweep (the request is settled on sight, by the owner's read).
      const context = yield* Layer.build(TestServerLive({
        chain: { rpcUrl: gate.url },
        config: { APPROVALS_TTL: "4 seconds", APPROVALS_SWEEP_INTERVAL: "1 hour" }
      }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const enforcer = net.delegation.caveatEnforcers["ApprovalEnforcer"]!.toLowerCase()
        // The enforcer's `spent` of the request's nonce: did the agent redeem it around the relay?
        const spentRead = (body: string) => body.includes("eth_call") && body.toLowerCase().includes(enforcer)
        const [owner, delegate, approver] = [yield* newSession(), yield* newSession(), yield* newSession()]
        yield* mint("usd", owner.account.address as Hex, 20)
        const g = yield* approvalGrant(owner, delegate, 10, { required: 1, approvers: [keyAddress(approver)], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })
        const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: privateKeyToAccount(generatePrivateKey()).address, amount: 3 } }))
        const id = held.details["approvalId"] as string
        const request = yield* approver.api.approvals.get({ params: { approvalId: id } })
        const approved = yield* approver.api.approvals.approve({ params: { approvalId: id }, payload: { signature: yield* signApproval(approver.key, request) } })
        assert.strictEqual(approved.status, "approved")
        yield* Effect.sleep(Duration.millis(Math.max(0, new Date(request.deadline).getTime() - Date.now()) + 500))

        const seen = yield* heldAndUnlocked(gate, spentRead, owner.api.approvals.get({ params: { approvalId: id } }), "the expiry", id, "approval_requests")
        assert.strictEqual(seen.status, "expired", JSON.stringify(seen))
        assert.strictEqual(seen.expiry?.reason, "deadline")
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped), 120_000)
})
