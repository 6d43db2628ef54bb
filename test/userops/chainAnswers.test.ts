/**
 * The relay answers what the chain says (issue 31 item 5):
 *
 * - an operation the wallet also sent through another bundler (here: straight to Alto), then
 *   relayed here, is answered 202 with its receipt (`included`, the transaction hash), one
 *   audit entry, the spend counted; not 422 with a decline the chain contradicts;
 * - a record the chain contradicts (a bundler's wrong refusal, a decline) is corrected on every
 *   log it reached, the owner's included, by a follow-up entry: never left `failed` or `declined`;
 * - a refusal's code reaches the receipt in fields of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { Network } from "../../src/chain/Network.ts"
import type { UserOperation } from "../../src/domain/Operations.ts"
import { enabled, failure, newSession, type Session, signOp, usdcBalance } from "../delegations/helpers.ts"
import { mint, testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { bundlerProxy } from "./bundlerProxy.ts"

process.env.DO_NOT_TRACK = "1"

/** Sends the signed operation straight to the run's Alto (another bundler, not the service's) and waits until it is mined. */
const sendAround = (op: UserOperation) =>
  Effect.gen(function*() {
    const bundler = yield* Bundler
    const hash = yield* bundler.sendUserOperation(fromWire(op)).pipe(Effect.orDie)
    return yield* bundler.getUserOperationReceipt(hash as Hash).pipe(
      Effect.orDie,
      Effect.flatMap((r) => (r === null ? Effect.fail("not mined yet") : Effect.succeed(r))),
      Effect.retry(Schedule.spaced(Duration.millis(100))),
      Effect.timeout(Duration.seconds(30)),
      Effect.orDie
    )
  }).pipe(Effect.provide(Bundler.layerWith({ retries: 0 }).pipe(Layer.provide(Layer.succeed(Network, testNetwork())))))

/** The owner's log of a delegation, in chain order. */
const ownerLog = (owner: Session, delegationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ status: string; decline_id: string | null; tx_hash: string | null; decline_reason: string | null }>`
      SELECT status, decline_id, tx_hash, decline_reason FROM audit_entries
      WHERE account_id = ${owner.account.id} AND delegation_id = ${delegationId} AND action = 'delegated_action'
      ORDER BY chain_index`.pipe(Effect.orDie)
  })

/** Every entry the relay wrote for an operation: its own, then any correction (key `chain:<id>:…`). */
const operationLog = (operationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ status: string; tx_hash: string | null }>`
      SELECT status, tx_hash FROM audit_entries WHERE operation_id = ${operationId} OR decline_id LIKE ${`chain:${operationId}:%`}
      ORDER BY chain_index`.pipe(Effect.orDie)
  })

const reservations = (delegationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ status: string }>`SELECT status FROM delegation_reservations WHERE delegation_id = ${delegationId}`.pipe(
      Effect.orDie
    )
    return rows.map((r) => r.status)
  })

const granted = (limits: { budget: number; perAction: number; maxActions: number }) =>
  Effect.gen(function*() {
    const owner = yield* newSession()
    const delegate = yield* newSession()
    yield* mint("usd", owner.account.address as Hex, limits.budget)
    const { created } = yield* enabled(owner, delegate, limits)
    return { owner, delegate, created, recipient: privateKeyToAccount(generatePrivateKey()).address.toLowerCase() }
  })

const waitUntil = <A>(what: string, effect: Effect.Effect<A, never, SqlClient.SqlClient>, check: (a: A) => boolean) =>
  effect.pipe(
    Effect.flatMap((a) => (check(a) ? Effect.succeed(a) : Effect.fail(`not yet: ${what}`))),
    Effect.retry(Schedule.spaced(Duration.millis(200))),
    Effect.timeoutOrElse({ duration: Duration.seconds(30), orElse: () => Effect.die(new Error(`timed out: ${what}`)) })
  )

describe("the relay answers what the chain says", () => {
  it.live("an action the chain already executed (sent through another bundler) is answered 202 included, once, its spend counted", () =>
    Effect.gen(function*() {
      const { owner, delegate, created, recipient } = yield* granted({ budget: 5, perAction: 5, maxActions: 5 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 5 } })
      const signed = yield* signOp(delegate.key, action.userOp)
      const mined = yield* sendAround(signed)
      assert.isTrue(mined.success)
      assert.strictEqual(yield* usdcBalance(recipient), 5_000_000n)
      // The wallet relays it here too. The chain has spent the whole budget: a policy check alone would
      // decline it (cap_exceeded) and record a transfer that happened as refused.
      const receipt = yield* delegate.api.userops.submit({ payload: signed })
      assert.deepStrictEqual([receipt.status, receipt.outcome], ["included", "mined"])
      assert.strictEqual(receipt.transactionHash, mined.transactionHash.toLowerCase())
      assert.isDefined(receipt.auditEventId)
      assert.deepStrictEqual((yield* operationLog(receipt.userOpId)).map((e) => e.status), ["executed"])
      const owners = yield* ownerLog(owner, created.id)
      assert.deepStrictEqual(owners.map((e) => [e.status, e.tx_hash]), [["executed", mined.transactionHash.toLowerCase()]])
      assert.deepStrictEqual(yield* reservations(created.id), ["final"])
      const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.deepStrictEqual(view.spentToDate.map((s) => [s.spent, s.reserved, s.remaining]), [[5, 0, 0]])
      // Relayed again: the same answer, nothing new.
      assert.strictEqual((yield* delegate.api.userops.submit({ payload: signed })).userOpId, receipt.userOpId)
      assert.strictEqual((yield* operationLog(receipt.userOpId)).length, 1)
    }).pipe(
      // The follower off: the relay alone must know (otherwise the follower may adopt it first).
      Effect.provide(Layer.fresh(TestServerLive({ config: { FOLLOWER_INTERVAL: "0 seconds" } })))
    ), { timeout: 120_000 })

  it.live("a refusal the chain contradicts: corrected on the delegate's AND the owner's log by a follow-up entry; the code in its own fields", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl, "up")
      const context = yield* Layer.build(TestServerLive({ chain: { bundlerUrl: proxy.url } }))
      yield* Effect.gen(function*() {
        const { owner, delegate, created, recipient } = yield* granted({ budget: 10, perAction: 5, maxActions: 5 })
        const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 2 } })
        const signed = yield* signOp(delegate.key, action.userOp)
        // The service's bundler refuses it (wrongly); the receipt says so, code by code.
        proxy.setMode("refuse-send")
        const refused = yield* delegate.api.userops.submit({ payload: signed })
        proxy.setMode("up")
        assert.deepStrictEqual([refused.status, refused.outcome], ["failed", "rejected"])
        assert.deepStrictEqual((yield* ownerLog(owner, created.id)).map((e) => e.status), ["failed"])
        assert.deepStrictEqual(yield* reservations(created.id), ["released"])

        // The wallet sends the same signed operation through another bundler: it executes.
        const mined = yield* sendAround(signed)
        const tx = mined.transactionHash.toLowerCase()
        // The follower corrects the record: the operation, the delegate's log, the owner's log, the spend.
        const corrected = yield* waitUntil(
          "the operation corrected",
          delegate.api.userops.get({ params: { userOpId: refused.userOpId }, query: {} }).pipe(Effect.orDie),
          (r) => r.status === "included"
        )
        assert.strictEqual(corrected.transactionHash, tx)
        assert.deepStrictEqual((yield* operationLog(refused.userOpId)).map((e) => [e.status, e.tx_hash]), [["failed", null], ["executed", tx]])
        const owners = yield* waitUntil("the owner's follow-up", ownerLog(owner, created.id), (rows) => rows.length === 2)
        assert.deepStrictEqual(owners.map((e) => [e.status, e.tx_hash]), [["failed", null], ["executed", tx]])
        assert.match(owners[1]!.decline_id ?? "", new RegExp(`^delegated:${refused.userOpId}:chain:${refused.userOpId}:${tx}:\\d+$`))
        assert.deepStrictEqual(yield* reservations(created.id), ["final"])
        const view = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
        assert.deepStrictEqual(view.spentToDate.map((s) => [s.spent, s.reserved]), [[2, 0]])

        // A decline the chain contradicts likewise: its reservation released (as the on-failed hook leaves
        // it), the relay declines; the same operation executes around the relay; the owner's log follows.
        const second = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 3 } })
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE delegation_reservations SET status = 'released', settled_at = now() WHERE status = 'reserved'
                   AND delegation_id = ${created.id}`
        const secondSigned = yield* signOp(delegate.key, second.userOp)
        const declined = yield* failure(delegate.api.userops.submit({ payload: secondSigned }))
        assert.strictEqual(declined.reason, "reservation_released")
        const declinedId = declined.details["userOpId"] as string
        const minedAgain = yield* sendAround(secondSigned)
        const tx2 = minedAgain.transactionHash.toLowerCase()
        yield* waitUntil(
          "the declined operation corrected",
          delegate.api.userops.get({ params: { userOpId: declinedId }, query: {} }).pipe(Effect.orDie),
          (r) => r.status === "included"
        )
        const after = yield* waitUntil("the owner's follow-up of the decline", ownerLog(owner, created.id), (rows) => rows.length === 4)
        assert.deepStrictEqual(after.slice(2).map((e) => [e.status, e.tx_hash]), [["declined", null], ["executed", tx2]])
        assert.strictEqual(yield* usdcBalance(recipient), 5_000_000n)
        // The refusal's codes were on its receipt in fields of their own (the corrected receipt, included, has none).
        assert.deepStrictEqual(refused.bundlerError, {
          rpcCode: -32507,
          aaCode: "AA24",
          reason: "invalid_signature",
          message: "AA24 signature error"
        })
        assert.isUndefined((yield* delegate.api.userops.get({ params: { userOpId: refused.userOpId }, query: {} })).bundlerError)
      }).pipe(Effect.provideContext(context))
    }).pipe(Effect.scoped), { timeout: 180_000 })
})
