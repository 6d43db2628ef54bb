/**
 * Signed webhooks over real HTTP with a real loopback receiver: the signature verifies,
 * 500s are retried with backoff and every attempt is readable, the last failure
 * dead-letters and a replay delivers; rotation; scoping; refused targets → 400.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../../src/client/signIn.ts"
import { Notifications } from "../../../src/notifications/Notifications.ts"
import { Webhook } from "standardwebhooks"
import { newSecret, verify } from "../../../src/notifications/webhooks/Signature.ts"
import { TestServer, TestServerLive } from "../../support/TestServer.ts"
import { startReceiver } from "./Receiver.ts"

export const webhookTestConfig = {
  WEBHOOKS_ALLOW_LOOPBACK: "true",
  WEBHOOKS_POLL_INTERVAL: "50 millis",
  WEBHOOKS_BACKOFF_BASE: "50 millis",
  WEBHOOKS_BACKOFF_MAX: "200 millis",
  WEBHOOKS_MAX_ATTEMPTS: "4"
}

const Live = Notifications.layer.pipe(Layer.provideMerge(TestServerLive({ config: webhookTestConfig })))

const newUser = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const account = privateKeyToAccount(generatePrivateKey())
  const session = yield* signIn(baseUrl, account)
  const call = (method: string, path: string, body?: unknown) =>
    Effect.promise(async () => {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await res.text()
      return { status: res.status, body: text === "" ? undefined : JSON.parse(text) as any }
    })
  return { address: account.address, call }
})

const note = (title: string) => ({ tone: "info" as const, title, body: `${title} body` })
const wait = (p: () => Promise<void>) => Effect.promise(p)

layer(Live, { excludeTestServices: true })("webhooks", (it) => {
  it.effect("a signed delivery, retried after 500s with every attempt readable; the secret is shown once", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const receiver = yield* Effect.promise(startReceiver)
      receiver.answer = (_r, n) => (n <= 2 ? 500 : 200)
      const alice = yield* newUser
      const created = yield* alice.call("POST", "/notifications/webhooks", { url: receiver.url })
      assert.strictEqual(created.status, 201)
      const secret = created.body.secret as string
      // A Standard Webhooks secret: "whsec_" + base64 of 32 random bytes.
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      const listed = yield* alice.call("GET", "/notifications/webhooks")
      assert.deepStrictEqual(listed.body, [{ id: created.body.id, url: receiver.url, createdAt: created.body.createdAt, rotatedAt: null }])
      assert.notInclude(JSON.stringify(listed.body), secret)

      const n = yield* notifications.notify(alice.address, note("budget"))
      yield* wait(() => receiver.waitFor(() => receiver.received.length >= 3))
      const now = Math.floor(Date.now() / 1000)
      for (const r of receiver.received) {
        // As a receiver verifies: the Standard Webhooks library, given the secret as shown.
        const headers = r.headers as Record<string, string>
        assert.deepStrictEqual(new Webhook(secret).verify(r.body, headers), JSON.parse(r.body))
        assert.throws(() => new Webhook(secret).verify(r.body + " ", headers))
        assert.throws(() => new Webhook(newSecret()).verify(r.body, headers))
        assert.strictEqual(headers["webhook-id"], headers["x-webhook-id"])
        // The deprecated header, still sent.
        assert.isTrue(verify(secret, r.headers["x-signature"] as string, r.body, now))
        assert.isFalse(verify(secret, r.headers["x-signature"] as string, r.body + " ", now))
        assert.isFalse(verify("whsec_other", r.headers["x-signature"] as string, r.body, now))
      }
      const payload = JSON.parse(receiver.received[2]!.body)
      assert.strictEqual(payload.type, "notification.created")
      assert.strictEqual(payload.data.id, n.id)
      assert.strictEqual(payload.id, receiver.received[0]!.headers["x-webhook-id"])
      assert.deepStrictEqual(receiver.received.map((r) => r.headers["x-webhook-attempt"]), ["1", "2", "3"])
      // One message id across the retries (receivers deduplicate on it); each attempt its own timestamp.
      assert.strictEqual(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size, 1)

      yield* Effect.sleep("100 millis")
      const deliveries = yield* alice.call("GET", `/notifications/webhooks/${created.body.id}/deliveries`)
      assert.strictEqual(deliveries.status, 200)
      const [d] = deliveries.body
      assert.strictEqual(d.status, "delivered")
      assert.strictEqual(d.notificationId, n.id)
      assert.deepStrictEqual(d.attemptLog.map((a: { statusCode: number }) => a.statusCode), [500, 500, 200])
      assert.strictEqual(receiver.received.length, 3)
      yield* Effect.promise(() => receiver.close())
    }))

  it.effect("after the last attempt a delivery is dead-lettered; a replay delivers it; rotation re-keys", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const receiver = yield* Effect.promise(startReceiver)
      receiver.answer = () => 500
      const alice = yield* newUser
      const created = yield* alice.call("POST", "/notifications/webhooks", { url: receiver.url })
      yield* notifications.notify(alice.address, note("blocked"))
      yield* wait(() => receiver.waitFor(() => receiver.received.length >= 4))
      const path = `/notifications/webhooks/${created.body.id}/deliveries`
      let d: any
      for (let i = 0; i < 50; i++) {
        d = (yield* alice.call("GET", path)).body[0]
        if (d.status === "dead") break
        yield* Effect.sleep("50 millis")
      }
      assert.strictEqual(d.status, "dead")
      assert.strictEqual(d.attempts, 4)
      assert.strictEqual(d.lastError, "HTTP 500")
      yield* Effect.sleep("300 millis")
      assert.strictEqual(receiver.received.length, 4) // no fifth try

      // Rotate, then replay: the replayed delivery is signed with the new secret only.
      const rotated = yield* alice.call("POST", `/notifications/webhooks/${created.body.id}/rotate-secret`)
      assert.strictEqual(rotated.status, 200)
      assert.notStrictEqual(rotated.body.secret, created.body.secret)
      receiver.answer = () => 200
      const replayed = yield* alice.call("POST", `/notifications/webhooks/deliveries/${d.id}/replay`)
      assert.strictEqual(replayed.status, 200)
      assert.strictEqual(replayed.body.status, "pending")
      yield* wait(() => receiver.waitFor(() => receiver.received.length >= 5))
      const last = receiver.received[4]!
      const now = Math.floor(Date.now() / 1000)
      assert.isTrue(verify(rotated.body.secret, last.headers["x-signature"] as string, last.body, now))
      assert.isFalse(verify(created.body.secret, last.headers["x-signature"] as string, last.body, now))
      const lastHeaders = last.headers as Record<string, string>
      assert.doesNotThrow(() => new Webhook(rotated.body.secret).verify(last.body, lastHeaders))
      assert.throws(() => new Webhook(created.body.secret).verify(last.body, lastHeaders))
      assert.strictEqual(last.headers["x-webhook-attempt"], "1")
      yield* Effect.sleep("100 millis")
      const after = (yield* alice.call("GET", path)).body[0]
      assert.strictEqual(after.status, "delivered")
      assert.strictEqual(after.attemptLog.length, 5)
      yield* Effect.promise(() => receiver.close())
    }))

  it.effect("scoping: another signer never lists, reads, rotates, deletes, replays or receives them", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const receiver = yield* Effect.promise(startReceiver)
      const alice = yield* newUser
      const bob = yield* newUser
      const created = yield* alice.call("POST", "/notifications/webhooks", { url: receiver.url })
      const id = created.body.id as string
      yield* notifications.notify(bob.address, note("for bob"))
      yield* notifications.notify(alice.address, note("for alice"))
      yield* wait(() => receiver.waitFor(() => receiver.received.length >= 1))
      yield* Effect.sleep("200 millis")
      assert.strictEqual(receiver.received.length, 1)
      assert.strictEqual(JSON.parse(receiver.received[0]!.body).data.title, "for alice")
      const deliveryId = JSON.parse(receiver.received[0]!.body).id as string

      assert.deepStrictEqual((yield* bob.call("GET", "/notifications/webhooks")).body, [])
      assert.strictEqual((yield* bob.call("GET", `/notifications/webhooks/${id}/deliveries`)).status, 404)
      assert.strictEqual((yield* bob.call("POST", `/notifications/webhooks/${id}/rotate-secret`)).status, 404)
      assert.strictEqual((yield* bob.call("POST", `/notifications/webhooks/deliveries/${deliveryId}/replay`)).status, 404)
      assert.strictEqual((yield* bob.call("DELETE", `/notifications/webhooks/${id}`)).status, 404)
      // Alice's endpoint still works, and her own delete is a 204; afterwards it is gone for her too.
      assert.strictEqual((yield* alice.call("GET", `/notifications/webhooks/${id}/deliveries`)).status, 200)
      assert.strictEqual((yield* alice.call("DELETE", `/notifications/webhooks/${id}`)).status, 204)
      assert.strictEqual((yield* alice.call("DELETE", `/notifications/webhooks/${id}`)).status, 404)
      yield* notifications.notify(alice.address, note("after delete"))
      yield* Effect.sleep("200 millis")
      assert.strictEqual(receiver.received.length, 1)
      yield* Effect.promise(() => receiver.close())
    }))

  it.effect("bad targets → 400 and nothing is registered", () =>
    Effect.gen(function*() {
      const alice = yield* newUser
      const bad = [
        "ftp://example.com/hook",
        "javascript:alert(1)",
        "not a url",
        `https://example.com/${"a".repeat(2100)}`,
        "http://10.0.0.7/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://192.168.1.1/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://0.0.0.0/",
        "http://user:pw@example.com/"
      ]
      for (const url of bad) {
        const r = yield* alice.call("POST", "/notifications/webhooks", { url })
        assert.strictEqual(r.status, 400, url)
        assert.strictEqual(r.body.error.code !== undefined, true)
      }
      assert.deepStrictEqual((yield* alice.call("GET", "/notifications/webhooks")).body, [])
    }))

  it.effect("a URL is stored and shown as it is called; what a parser would repair is refused (400 naming the field)", () =>
    Effect.gen(function*() {
      const alice = yield* newUser
      // Shown as the URL parser serializes it: scheme and host lower-cased, default port dropped,
      // dot segments resolved, the path made explicit, the fragment (never sent) dropped.
      const cases: ReadonlyArray<[string, string]> = [
        ["HTTP://127.0.0.1:80/a/../hook#frag", "http://127.0.0.1/hook"],
        ["http://LOCALHOST:9", "http://localhost:9/"],
        ["http://127.0.0.1:9/p%41th?q=a b".replace(" ", "%20"), "http://127.0.0.1:9/p%41th?q=a%20b"]
      ]
      for (const [sent, stored] of cases) {
        const created = yield* alice.call("POST", "/notifications/webhooks", { url: sent })
        assert.strictEqual(created.status, 201, sent)
        assert.strictEqual(created.body.url, stored, sent)
      }
      const listed = (yield* alice.call("GET", "/notifications/webhooks")).body as Array<{ url: string }>
      assert.deepStrictEqual(listed.map((e) => e.url), cases.map(([, stored]) => stored))

      const refused = [
        "http://127.0.0.1:9/x\r\nX-a: 1", // a header injection a parser would flatten into the path
        " http://127.0.0.1:9/x", // leading whitespace (trimmed by a parser)
        "http://127.0.0.1:9/x ",
        "http://127.0.0.1:9/a\tb",
        "http://127.0.0.1:9/\u0085",
        "http:/127.0.0.1:9/x", // one slash: a parser calls http://127.0.0.1:9/x
        "http:127.0.0.1:9/x",
        "http:\\\\127.0.0.1:9/x",
        "http://127.0.0.1\\@evil.example/",
        "http://@127.0.0.1:9/",
        "http://:pw@127.0.0.1:9/",
        "http://u@127.0.0.1:9/",
        "http://127.0.0.1:/x",
        "http://127.0.0.1:99999/x",
        "http://[::1/x",
        "http:///x",
        "http://127.0.0.1:9:9/x"
      ]
      for (const url of refused) {
        const r = yield* alice.call("POST", "/notifications/webhooks", { url })
        assert.strictEqual(r.status, 400, JSON.stringify(url))
        assert.strictEqual(r.body.error.code, "bad_request", JSON.stringify(url))
        assert.strictEqual(r.body.error.details?.field, "url", JSON.stringify(url))
      }
      assert.strictEqual(((yield* alice.call("GET", "/notifications/webhooks")).body as Array<unknown>).length, cases.length)
    }))
})
