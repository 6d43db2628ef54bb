/**
 * A released reservation (its operation failed or was declined) is never usable
 * again: relaying an operation built on it is declined, and nothing is spent.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { enabled, failure, newSession, signOp, usdcBalance } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(90), excludeTestServices: true })("released reservations", (it) => {
  it.effect("an operation whose reservation was released is declined at the relay (reservation_released)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      yield* mint("usd", owner.account.address as Hex, 20)
      const { created } = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 5 } })
      const signed = yield* signOp(delegate.key, action.userOp)
      // As the on-failed hook leaves it after a failed or declined operation.
      yield* sql`UPDATE delegation_reservations SET status = 'released', settled_at = now() WHERE delegation_id = ${created.id}`
      const declined = yield* failure(delegate.api.userops.submit({ payload: signed }))
      assert.deepStrictEqual([declined.tag, declined.reason], ["OutOfScope", "reservation_released"])
      const rows = yield* sql<{ status: string }>`SELECT status FROM delegation_reservations WHERE delegation_id = ${created.id}`
      assert.deepStrictEqual(rows.map((r) => r.status), ["released"])
      assert.strictEqual(yield* usdcBalance(recipient), 0n)
    }))
})
