/**
 * A delivery is never lost across a restart: the delivery worker (the service layer that
 * sends webhooks) is stopped mid-retry and while a notification is written, another one is
 * started on the same database, and every delivery arrives. Plus the target guard's
 * classification and its DNS check with the default policy (loopback refused).
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Notifications } from "../../../src/notifications/Notifications.ts"
import { WebhookDeliveryLive } from "../../../src/notifications/webhooks/Delivery.ts"
import { randomBytes } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { verify } from "../../../src/notifications/webhooks/Signature.ts"
import { checkTarget, classify } from "../../../src/notifications/webhooks/UrlGuard.ts"
import { testConfig } from "../../support/TestServer.ts"
import { TestDatabaseLive } from "../../support/TestDatabase.ts"
import { startReceiver } from "./Receiver.ts"

const worker = WebhookDeliveryLive.pipe(
  Layer.provide(testConfig({
    WEBHOOKS_ALLOW_LOOPBACK: "true",
    WEBHOOKS_POLL_INTERVAL: "50 millis",
    WEBHOOKS_BACKOFF_BASE: "100 millis",
    WEBHOOKS_BACKOFF_MAX: "100 millis",
    WEBHOOKS_LEASE: "300 millis",
    WEBHOOKS_MAX_ATTEMPTS: "20"
  }))
)

/** Starts a delivery worker on the current database; answers a function that stops it. */
const startWorker = Effect.gen(function*() {
  const scope = yield* Scope.make()
  yield* Layer.buildWithScope(worker, scope)
  return Scope.close(scope, Exit.void)
})

layer(Notifications.layer.pipe(Layer.provideMerge(TestDatabaseLive())), { excludeTestServices: true })("webhook restart", (it) => {
  it.effect("stop the worker mid-retry, write more, start another: nothing is lost, each arrives signed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const notifications = yield* Notifications
      const receiver = yield* Effect.promise(startReceiver)
      receiver.answer = () => 500
      const signer = "0x00000000000000000000000000000000000000a1"
      // A secret as issued before Standard Webhooks (base64url, no padding): it still signs both headers.
      const secret = `whsec_${randomBytes(32).toString("base64url")}`
      yield* sql`INSERT INTO webhook_endpoints (id, signer_address, url, secret) VALUES ('whe_r', ${signer}, ${receiver.url}, ${secret})`
      const first = yield* notifications.notify(signer, { tone: "info", title: "first", body: "b" })

      const stopA = yield* startWorker
      yield* Effect.promise(() => receiver.waitFor(() => receiver.received.length >= 2))
      yield* stopA
      const second = yield* notifications.notify(signer, { tone: "info", title: "second", body: "b" })
      const pending = yield* sql<{ status: string }>`SELECT status FROM webhook_deliveries ORDER BY created_at`
      assert.deepStrictEqual(pending.map((p) => p.status), ["pending", "pending"])

      receiver.answer = () => 200
      const stopB = yield* startWorker
      const triedBeforeB = receiver.received.length
      const afterRestart = () => receiver.received.slice(triedBeforeB).map((r) => r.body)
      yield* Effect.promise(() =>
        receiver.waitFor(() => afterRestart().some((b) => b.includes(first.id)) && afterRestart().some((b) => b.includes(second.id))))
      yield* Effect.sleep("200 millis")
      yield* stopB
      const rows = yield* sql<{ notification_id: string; status: string }>`
        SELECT notification_id, status FROM webhook_deliveries ORDER BY created_at`
      assert.deepStrictEqual(rows.map((r) => [r.notification_id, r.status]), [[first.id, "delivered"], [second.id, "delivered"]])
      const now = Math.floor(Date.now() / 1000)
      // A receiver converts the old secret's alphabet (docs/notifications.md) for its Standard Webhooks library.
      const standard = `whsec_${Buffer.from(secret.slice(6), "base64url").toString("base64")}`
      for (const r of receiver.received) {
        assert.isTrue(verify(secret, r.headers["x-signature"] as string, r.body, now))
        assert.doesNotThrow(() => new Webhook(standard).verify(r.body, r.headers as Record<string, string>))
      }
      yield* Effect.promise(() => receiver.close())
    }))
})

describe("webhook target guard", () => {
  it("classifies addresses", () => {
    const cases: Array<[string, string]> = [
      ["127.0.0.1", "loopback"], ["::1", "loopback"], ["::ffff:127.0.0.1", "loopback"],
      ["10.1.2.3", "private"], ["172.20.0.1", "private"], ["192.168.0.1", "private"], ["169.254.169.254", "private"],
      ["100.64.0.1", "private"], ["0.0.0.0", "private"], ["224.0.0.1", "private"], ["fe80::1", "private"],
      ["fd12:3456::1", "private"], ["::ffff:192.168.0.1", "private"], ["64:ff9b::a00:1", "private"], ["::", "private"],
      ["8.8.8.8", "public"], ["2606:4700:4700::1111", "public"], ["::ffff:8.8.8.8", "public"]
    ]
    for (const [ip, expected] of cases) assert.strictEqual(classify(ip), expected, ip)
  })

  it("refuses a name that resolves to loopback unless allowed", async () => {
    const refused = await checkTarget("http://localhost:9/hook", { allowLoopback: false, allowPrivate: false })
    assert.include(refused ?? "", "refused address")
    assert.isUndefined(await checkTarget("http://localhost:9/hook", { allowLoopback: true, allowPrivate: false }))
    assert.include((await checkTarget("http://[::1]:9/", { allowLoopback: false, allowPrivate: false })) ?? "", "refused")
  })
})
