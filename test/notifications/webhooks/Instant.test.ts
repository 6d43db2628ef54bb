/**
 * Webhooks without a poll (docs/notifications.md): a delivery starts when its notification is
 * committed, whoever committed it (the service, or any other writer of the database), not at
 * the worker's next poll, which here is an hour away. Retries still come from the poll.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../../src/client/signIn.ts"
import { Notifications } from "../../../src/notifications/Notifications.ts"
import { TestServer, TestServerLive } from "../../support/TestServer.ts"
import { startReceiver } from "./Receiver.ts"

const Live = Notifications.layer.pipe(Layer.provideMerge(TestServerLive({
  config: { WEBHOOKS_ALLOW_LOOPBACK: "true", WEBHOOKS_POLL_INTERVAL: "1 hour" }
})))

layer(Live, { excludeTestServices: true })("webhooks woken at commit", (it) => {
  it.effect("a notification committed by the service, then one committed by another writer, each delivered without a poll", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const sql = yield* SqlClient.SqlClient
      const { baseUrl } = yield* TestServer
      const receiver = yield* Effect.promise(startReceiver)
      const account = privateKeyToAccount(generatePrivateKey())
      const session = yield* signIn(baseUrl, account)
      const created = yield* Effect.promise(() =>
        fetch(`${baseUrl}/notifications/webhooks`, {
          method: "POST",
          headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
          body: JSON.stringify({ url: receiver.url })
        }).then((r) => r.status)
      )
      assert.strictEqual(created, 201)
      // The worker's first pass ran at start; the next poll is an hour away.
      const first = yield* notifications.notify(account.address, { tone: "info", title: "first", body: "first body" })
      yield* Effect.promise(() => receiver.waitFor(() => receiver.received.length >= 1, 15_000))
      assert.strictEqual(JSON.parse(receiver.received[0]!.body).data.id, first.id)

      // Another writer (a statement of its own, as another process would): the trigger writes the
      // outbox row and the announcement in that transaction; the worker hears it at its commit.
      const signer = account.address.toLowerCase()
      const id = `ntf_${crypto.randomUUID()}`
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO notifications (id, signer_address, tone, title, body, created_at)
                   VALUES (${id}, ${signer}, 'info', 'second', 'second body', now())`
        // Not yet committed: nothing may be sent.
        yield* Effect.sleep("300 millis")
        assert.strictEqual(receiver.received.length, 1)
      }))
      yield* Effect.promise(() => receiver.waitFor(() => receiver.received.length >= 2, 15_000))
      assert.strictEqual(JSON.parse(receiver.received[1]!.body).data.id, id)
      yield* Effect.promise(() => receiver.close())
    }), 60_000)
})
