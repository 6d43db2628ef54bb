/**
 * The notifications stream over real HTTP: a notification written by anyone on the
 * database (here: a separate client, as another service process would) reaches the
 * signer's subscribers; heartbeats; resume with Last-Event-ID; scoping; bad input.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { Notifications } from "../../src/notifications/Notifications.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { openSse } from "./SseClient.ts"

const Live = Notifications.layer.pipe(
  Layer.provideMerge(TestServerLive({ config: { NOTIFICATIONS_STREAM_HEARTBEAT: "200 millis" } }))
)

const newUser = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const account = privateKeyToAccount(generatePrivateKey())
  const session = yield* signIn(baseUrl, account)
  return { address: account.address, token: session.token }
})

const stream = (token: string, extra: Record<string, string> = {}) =>
  Effect.flatMap(TestServer, ({ baseUrl }) =>
    Effect.promise(() => openSse(`${baseUrl}/notifications/stream`, { authorization: `Bearer ${token}`, ...extra })))

const note = (title: string) => ({ tone: "info" as const, title, body: `${title} body` })

layer(Live, { excludeTestServices: true })("notifications stream", (it) => {
  it.effect("live events reach only their signer's subscribers, with heartbeats; resume replays what was missed", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const alice = yield* newUser
      const bob = yield* newUser
      const a1 = yield* stream(alice.token)
      const a2 = yield* stream(alice.token)
      const b = yield* stream(bob.token)
      assert.strictEqual(a1.status, 200)
      // Subscribed once the first bytes (written after joining the hub) arrive.
      for (const c of [a1, a2, b]) yield* Effect.promise(() => c.waitFor((x) => x.comments.includes("connected")))

      const n1 = yield* notifications.notify(alice.address, note("one"))
      yield* notifications.notify(bob.address, note("for bob"))
      const n2 = yield* notifications.notify(alice.address, note("two"))
      for (const c of [a1, a2]) yield* Effect.promise(() => c.waitFor((x) => x.events.length === 2))
      yield* Effect.promise(() => b.waitFor((x) => x.events.length === 1))
      const got = a1.events.map((e) => JSON.parse(e.data) as { id: string; title: string })
      assert.deepStrictEqual(got.map((n) => n.id), [n1.id, n2.id])
      assert.deepStrictEqual(a2.events, a1.events)
      assert.strictEqual((JSON.parse(b.events[0]!.data) as { title: string }).title, "for bob")
      assert.isFalse(a1.events.some((e) => e.data.includes("for bob")))
      // Heartbeats (every 200 ms in this configuration).
      yield* Effect.promise(() => a1.waitFor((c) => c.comments.includes("heartbeat"), 3000))

      // Alice disconnects after the first event; two more are written; she resumes from the first id.
      const lastSeen = a1.events[0]!.id!
      a1.close()
      a2.close()
      const n3 = yield* notifications.notify(alice.address, note("three"))
      const resumed = yield* stream(alice.token, { "last-event-id": lastSeen })
      yield* Effect.promise(() => resumed.waitFor((c) => c.events.length === 2))
      assert.deepStrictEqual(resumed.events.map((e) => (JSON.parse(e.data) as { id: string }).id), [n2.id, n3.id])
      // ... and then keeps receiving live events, each once.
      yield* Effect.promise(() => resumed.waitFor((c) => c.comments.includes("connected")))
      const n4 = yield* notifications.notify(alice.address, note("four"))
      yield* Effect.promise(() => resumed.waitFor((c) => c.events.length === 3))
      assert.strictEqual((JSON.parse(resumed.events[2]!.data) as { id: string }).id, n4.id)
      // Bob resuming from Alice's id sees none of hers.
      const bobResumed = yield* stream(bob.token, { "last-event-id": "0" })
      yield* Effect.promise(() => bobResumed.waitFor((c) => c.events.length === 1))
      yield* Effect.sleep("150 millis")
      assert.strictEqual(bobResumed.events.length, 1)
      for (const c of [resumed, b, bobResumed]) c.close()
    }))

  // A run beside a second copy of the suite once got "three" twice: it was committed while the
  // resumed stream's replay was being read, so it came live (before the replay's answer) and in the
  // replay. Here a notification is written at the same moment as each of 20 resumes.
  it.effect("a resume racing a new notification sends every event once, in order", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const alice = yield* newUser
      const first = yield* stream(alice.token)
      yield* Effect.promise(() => first.waitFor((x) => x.comments.includes("connected")))
      yield* notifications.notify(alice.address, note("start"))
      yield* Effect.promise(() => first.waitFor((x) => x.events.length === 1))
      const lastSeen = first.events[0]!.id!
      first.close()
      for (let round = 0; round < 20; round++) {
        const [resumed] = yield* Effect.all([
          stream(alice.token, { "last-event-id": lastSeen }),
          notifications.notify(alice.address, note(`racing ${round}`))
        ], { concurrency: "unbounded" })
        yield* Effect.promise(() => resumed.waitFor((x) => x.comments.includes("connected")))
        const marker = yield* notifications.notify(alice.address, note(`marker ${round}`))
        yield* Effect.promise(() => resumed.waitFor((x) => x.events.some((e) => e.data.includes(marker.id))))
        const ids = resumed.events.map((e) => Number(e.id))
        assert.deepStrictEqual(ids, [...new Set(ids)].sort((a, b) => a - b), `round ${round}: each event once, in order`)
        // Everything after lastSeen: the earlier rounds' racing and marker events, this round's two.
        assert.strictEqual(ids.length, 2 * (round + 1), `round ${round}: nothing missed`)
        resumed.close()
      }
    }), { timeout: 120_000 })

  it.effect("no session → 401; a malformed Last-Event-ID → 400", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const alice = yield* newUser
      const anonymous = yield* Effect.promise(() => fetch(`${baseUrl}/notifications/stream`))
      assert.strictEqual(anonymous.status, 401)
      const bad = yield* Effect.promise(() =>
        fetch(`${baseUrl}/notifications/stream`, { headers: { authorization: `Bearer ${alice.token}`, "last-event-id": "abc" } }))
      assert.strictEqual(bad.status, 400)
      assert.include(yield* Effect.promise(() => bad.text()), "Last-Event-ID")
    }))
})

/** Opens `n` streams of `token` one after another (each joined before the next), answering their statuses. */
const openMany = (token: string, n: number) =>
  Effect.gen(function*() {
    const opened: Array<Effect.Success<ReturnType<typeof stream>>> = []
    for (let i = 0; i < n; i++) {
      const c = yield* stream(token)
      if (c.status === 200) yield* Effect.promise(() => c.waitFor((x) => x.comments.includes("connected")))
      opened.push(c)
    }
    return opened
  })

describe("notifications stream: shared fairly (issue 31 item 3)", () => {
  it.live("one signer opens its cap and more; another signer still gets its stream", () =>
    Effect.gen(function*() {
      const notifications = yield* Notifications
      const alice = yield* newUser
      const bob = yield* newUser
      // The process takes 6 streams, a signer 3: Alice asks for all 6.
      const hers = yield* openMany(alice.token, 6)
      assert.deepStrictEqual(hers.map((c) => c.status), [200, 200, 200, 429, 429, 429])
      const b = yield* stream(bob.token)
      assert.strictEqual(b.status, 200, "Bob's stream is not taken by Alice's")
      yield* Effect.promise(() => b.waitFor((x) => x.comments.includes("connected")))
      yield* notifications.notify(bob.address, note("for bob"))
      yield* Effect.promise(() => b.waitFor((x) => x.events.length === 1))
      // One of hers closes: she may open one again.
      hers[0]!.close()
      yield* Effect.sleep("200 millis")
      const again = yield* stream(alice.token)
      assert.strictEqual(again.status, 200)
      for (const c of [...hers, b, again]) c.close()
    }).pipe(Effect.provide(Notifications.layer.pipe(Layer.provideMerge(Layer.fresh(TestServerLive({
      config: { NOTIFICATIONS_STREAM_MAX_SUBSCRIBERS: "6", NOTIFICATIONS_STREAM_MAX_PER_SIGNER: "3", NOTIFICATIONS_STREAM_MAX_PER_ADDRESS: "0" }
    })))))), { timeout: 60_000 })

  it.live("fresh keys from one client address get at most the address's share", () =>
    Effect.gen(function*() {
      const users = yield* Effect.forEach(Array.from({ length: 5 }, (_, i) => i), () => newUser)
      const opened: Array<Effect.Success<ReturnType<typeof stream>>> = []
      for (const u of users) opened.push(...(yield* openMany(u.token, 1)))
      // All from 127.0.0.1: the address's share is 4 of the process's 10.
      assert.deepStrictEqual(opened.map((c) => c.status), [200, 200, 200, 200, 429])
      for (const c of opened) c.close()
    }).pipe(Effect.provide(Notifications.layer.pipe(Layer.provideMerge(Layer.fresh(TestServerLive({
      config: { NOTIFICATIONS_STREAM_MAX_SUBSCRIBERS: "10", NOTIFICATIONS_STREAM_MAX_PER_SIGNER: "3", NOTIFICATIONS_STREAM_MAX_PER_ADDRESS: "4" }
    })))))), { timeout: 60_000 })
})
