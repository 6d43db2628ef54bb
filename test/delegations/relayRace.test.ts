/**
 * A budget is never locked for good (issue 31 items 1–2), with two service PROCESSES on
 * one database (this one and `src/main.ts` as a child process):
 *
 * - the same refused action relayed 8 times at once, half to each process, leaves nothing
 *   reserved, round after round: the reservation is bound to the operation that was stored,
 *   whichever request stored it;
 * - 100 concurrent actions on one budget, each relayed twice at once (once per process):
 *   every operation that cannot execute (its nonce used by the one that did) settles at
 *   once (well before `RELAY_RESEND_AFTER`), and the grant ends with nothing reserved and
 *   exactly what the chain shows spent.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import type { UserOperation } from "../../src/domain/Operations.ts"
import { replicaEnv, startService, stopService } from "../support/ServiceProcess.ts"
import { mint } from "../support/TestChain.ts"
import { testDatabaseName } from "../support/TestDatabase.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { enabled, signOp, usdcBalance } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const database = testDatabaseName()

/** Rounds of the 8-way relay (before the fix, one round in three left its reservation stuck). */
const ROUNDS = 10

/** The second service process on this file's database, started once for the file. */
class SecondProcess extends Context.Service<SecondProcess, { readonly baseUrl: string }>()("test/relayRace/SecondProcess") {}
const SecondProcessLive = Layer.effect(
  SecondProcess,
  Effect.acquireRelease(
    startService(replicaEnv(database, { FOLLOWER_INTERVAL: "300 millis", RELAY_RECONCILE_INTERVAL: "1 second" })),
    (b) => stopService(b.child)
  ).pipe(Effect.map((b) => ({ baseUrl: b.baseUrl })))
)
const secondProcess = Effect.gen(function*() {
  return yield* SecondProcess
})

/** A signed-in key with a client on this process and one on the second. */
const sessionOnBoth = (secondUrl: string) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const key = generatePrivateKey()
    const s = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* client(s.token)
    const other = yield* makeClient({ baseUrl: secondUrl, token: s.token })
    const [account] = yield* api.accounts.listAccounts()
    return { api, other, account: account!, key }
  })

const sign = (key: Hex, op: UserOperation) => signOp(key, op)

const reservationStatuses = (delegationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ status: string; units: string }>`
      SELECT status, units::text AS units FROM delegation_reservations WHERE delegation_id = ${delegationId}`.pipe(Effect.orDie)
  })

const unsettled = (sender: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`
      SELECT count(*)::int AS n FROM user_operations WHERE sender = ${sender.toLowerCase()} AND status = 'submitted'`.pipe(Effect.orDie)
    return rows[0]!.n
  })

// The second process attaches to the database the first one created (and migrated).
layer(SecondProcessLive.pipe(Layer.provideMerge(TestServerLive({ database: { name: database } }))), {
  timeout: Duration.seconds(300),
  excludeTestServices: true
})(
  "reservations under concurrent relays, two processes",
  (it) => {
    it.effect(`the same refused action relayed 8 times at once over two processes leaves nothing reserved (${ROUNDS} rounds)`, () =>
      Effect.gen(function*() {
        const b = yield* secondProcess
        const owner = yield* sessionOnBoth(b.baseUrl)
        const delegate = yield* sessionOnBoth(b.baseUrl)
        yield* mint("usd", owner.account.address as Hex, 10)
        const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 1, maxActions: 100 })
        const stuck: Array<string> = []
        for (let round = 0; round < ROUNDS; round++) {
          const recipient = privateKeyToAccount(generatePrivateKey()).address
          const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 1 } })
          // Signed by another key: the bundler refuses it (AA24), at once and for good.
          const forged = yield* sign(generatePrivateKey(), action.userOp)
          const answers = yield* Effect.forEach(
            Array.from({ length: 8 }, (_, i) => i),
            (i) =>
              (i % 2 === 0 ? delegate.api : delegate.other).userops.submit({ payload: forged }).pipe(
                Effect.map((r) => r.userOpId),
                Effect.catch((e) => Effect.succeed(`error ${e._tag}`))
              ),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(new Set(answers).size, 1, `one operation answered to every copy: ${answers.join(", ")}`)
          assert.match(answers[0]!, /^uop_/)
          const receipt = yield* delegate.api.userops.get({ params: { userOpId: answers[0]! }, query: {} })
          assert.deepStrictEqual([receipt.status, receipt.outcome], ["failed", "rejected"])
          const statuses = yield* reservationStatuses(created.id)
          const held = statuses.filter((r) => r.status !== "released")
          if (held.length > 0) stuck.push(`round ${round}: ${held.map((r) => r.status).join(", ")}`)
          // Whatever happened, the next round starts from a clean ledger.
          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE delegation_reservations SET status = 'released' WHERE delegation_id = ${created.id}`
        }
        assert.deepStrictEqual(stuck, [], "no round left its reservation held")
        const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
        assert.deepStrictEqual(view.spentToDate.map((s) => [s.spent, s.reserved]), [[0, 0]])
      }), { timeout: 180_000 })

    it.effect("three actions at one nonce relayed at once: the two that cannot execute settle at once (nonce_used), reservations freed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const b = yield* secondProcess
        const owner = yield* sessionOnBoth(b.baseUrl)
        const delegate = yield* sessionOnBoth(b.baseUrl)
        yield* mint("usd", owner.account.address as Hex, 10)
        const { created } = yield* enabled(owner, delegate, { budget: 10, perAction: 3, maxActions: 10 })
        const started = Date.now()
        const ids = yield* Effect.forEach(
          [2, 1.95, 2],
          (amount) =>
            Effect.gen(function*() {
              const recipient = privateKeyToAccount(generatePrivateKey()).address
              const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount } })
              return action.userOp
            }),
          { concurrency: "unbounded" }
        ).pipe(
          Effect.flatMap((ops) => Effect.forEach(ops, (op) => sign(delegate.key, op))),
          Effect.flatMap((signed) =>
            Effect.forEach(
              signed,
              (op, i) =>
                (i % 2 === 0 ? delegate.api : delegate.other).userops.submit({ payload: op }).pipe(
                  Effect.map((r) => r.userOpId),
                  // One that arrives after another of the three was included (a loaded machine runs
                  // them apart): its reservation was released with that inclusion (same nonce), and
                  // it is declined at once, stored and logged. Settled at once all the same.
                  Effect.catchTag("OutOfScope", (e) =>
                    e.declineReason === "reservation_released" && typeof e.details?.["userOpId"] === "string"
                      ? Effect.succeed(e.details["userOpId"] as string)
                      : Effect.fail(e))
                ),
              { concurrency: "unbounded" }
            )
          )
        )
        assert.strictEqual(ids.length, 3)
        const settled = yield* waitFor(
          "all three settled",
          Effect.gen(function*() {
            const rows = yield* sql<
              {
                id: string
                status: string
                outcome: string
                reason: string | null
                decline_reason: string | null
                audit_event_id: string | null
                submitted_at: Date
                settled_at: Date | null
              }
            >`
              SELECT id, status, outcome, reason, decline_reason, audit_event_id, submitted_at, settled_at
              FROM user_operations WHERE id IN ${sql.in(ids)}`.pipe(Effect.orDie)
            return rows.every((r) => r.status !== "submitted" && r.audit_event_id !== null) ? rows : undefined
          }),
          60
        )
        // Well before RELAY_RESEND_AFTER (2 minutes): what the chain shows is acted on at once.
        assert.isBelow(Date.now() - started, 60_000)
        assert.strictEqual(settled.filter((r) => r.status === "included").length, 1)
        const failed = settled.filter((r) => r.status === "failed")
        assert.strictEqual(failed.length, 2)
        const included = settled.find((r) => r.status === "included")!
        for (const r of failed) {
          assert.strictEqual(r.outcome, "rejected")
          if (r.decline_reason === "reservation_released") {
            // Declined at its submission: only once the included one had settled and freed it.
            assert.isAtMost(included.settled_at!.getTime(), r.submitted_at.getTime(), JSON.stringify(settled))
            continue
          }
          // Settled by the chain's record of the other one (`nonce_used: …`), or by a refusal whose chain check found the nonce used.
          assert.include(r.reason ?? "", "its nonce was used by another operation")
        }
        const entries = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_entries WHERE operation_id IN ${sql.in(ids)}`
        assert.strictEqual(entries[0]!.n, 3, "one audit entry each")
        const statuses = (yield* reservationStatuses(created.id)).map((r) => r.status).sort()
        assert.deepStrictEqual(statuses, ["final", "released", "released"])
        const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
        assert.strictEqual(view.spentToDate[0]!.reserved, 0)
      }), { timeout: 120_000 })

    it.effect("100 concurrent actions on one budget, each relayed twice at once over two processes: reserved 0, spent = the chain's", () =>
      Effect.gen(function*() {
        const b = yield* secondProcess
        const owner = yield* sessionOnBoth(b.baseUrl)
        const delegate = yield* sessionOnBoth(b.baseUrl)
        yield* mint("usd", owner.account.address as Hex, 5)
        const { created } = yield* enabled(owner, delegate, { budget: 5, perAction: 1, maxActions: 1000 })
        const recipients: Array<string> = []
        for (let round = 0; round < 2; round++) {
          const batch = Array.from({ length: 100 }, () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase())
          recipients.push(...batch)
          const relayed = yield* Effect.forEach(
            batch,
            (recipient, i) =>
              Effect.gen(function*() {
                const amount = [0.25, 0.5, 1][i % 3]!
                const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount } })
                const signed = yield* sign(delegate.key, action.userOp)
                // A client retrying a request still in flight, to both processes.
                yield* Effect.all([delegate.api.userops.submit({ payload: signed }), delegate.other.userops.submit({ payload: signed })], {
                  concurrency: 2
                })
                return "relayed"
              }).pipe(Effect.catch((e) => Effect.succeed((e as { declineReason?: string }).declineReason ?? e._tag))),
            { concurrency: "unbounded" }
          )
          assert.isAtLeast(relayed.filter((r) => r === "relayed").length, 1, relayed.join(","))
          // Declined at the action (over the budget), or at the relay when the nonce was already used by the
          // operation that executed (its reservation was freed then: `reservation_released`).
          assert.isTrue(relayed.every((r) => r === "relayed" || r === "cap_exceeded" || r === "reservation_released"), relayed.join(","))
          // Every operation settles: the one that executed, and the others as soon as the chain shows the nonce used
          // (before, they stayed submitted, holding their reservations, until RELAY_RESEND_AFTER: 2 minutes).
          yield* waitFor(
            "every operation settled",
            Effect.map(unsettled(delegate.account.address), (n) => (n === 0 ? true : undefined)).pipe(
              Effect.provideService(SqlClient.SqlClient, yield* SqlClient.SqlClient)
            ),
            60
          )
        }
        const balances = yield* Effect.forEach(recipients, usdcBalance, { concurrency: 10 })
        const onChain = balances.reduce<bigint>((a, x) => a + x, 0n)
        assert.isTrue(onChain > 0n, "something was spent")
        const statuses = yield* reservationStatuses(created.id)
        assert.deepStrictEqual(statuses.filter((r) => r.status === "reserved" || r.status === "submitted"), [], "nothing reserved")
        const final = statuses.filter((r) => r.status === "final").reduce((a, r) => a + BigInt(r.units), 0n)
        assert.strictEqual(final, onChain, "the service's record of what was spent is the chain's")
        const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
        assert.strictEqual(view.spentToDate[0]!.reserved, 0)
        assert.strictEqual(BigInt(Math.round(view.spentToDate[0]!.spent * 1e6)), onChain)
        assert.strictEqual(BigInt(Math.round(view.spentToDate[0]!.remaining * 1e6)), 5_000_000n - onChain)
      }), { timeout: 240_000 })
  }
)
