/**
 * Notifications over real HTTP: block and action alerts raised with their audit
 * entries, scoping between two signers, read and read-all.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { EntryNotifierLive } from "../../src/notifications/EntryNotifier.ts"
import { AuditLive, AuditRecorder } from "../../src/audit/Recorder.ts"
import { signIn } from "../../src/client/signIn.ts"
import { relativeLabel } from "../../src/notifications/Notifications.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { decline, outcome } from "../audit/support.ts"

const Live = AuditLive.pipe(Layer.provide(EntryNotifierLive), Layer.provideMerge(TestServerLive()))

const newUser = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
  const api = yield* client(session.token)
  return { api, accountId: session.accounts[0]!.id, token: session.token }
})

const post = (path: string, token: string) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    return yield* Effect.promise(async () => {
      const res = await fetch(`${baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}` } })
      return { status: res.status, text: await res.text() }
    })
  })

layer(Live, { excludeTestServices: true })("notifications", (it) => {
  it.effect("a blocked action raises a danger alert linking to its activity event; an executed one a success alert", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const alice = yield* newUser
      const blocked = yield* recorder.recordDecline(decline(alice.accountId, { declineReason: "per_action_exceeded" }))
      const done = yield* recorder.recordOutcome(outcome(alice.accountId))
      const failed = yield* recorder.recordOutcome(outcome(alice.accountId, { status: "failed", txHash: undefined, declineReason: "AA21 didn't pay prefund" }))
      const list = yield* alice.api.notifications.list({ query: { unreadOnly: false } })
      assert.deepStrictEqual(list.map((n) => n.relatedId), [failed.entry.id, done.entry.id, blocked.entry.id])
      const [nf, nd, nb] = list
      assert.strictEqual(nb!.tone, "danger")
      assert.strictEqual(nb!.title, "Action blocked")
      assert.include(nb!.body, "per-action maximum")
      assert.strictEqual(nb!.relatedType, "activity")
      assert.deepStrictEqual(nb!.action, { label: "View activity", target: `activity/${blocked.entry.id}` })
      assert.isFalse(nb!.read)
      assert.strictEqual(nb!.timeLabel, "just now")
      assert.strictEqual(nd!.tone, "success")
      assert.strictEqual(nf!.tone, "danger")
      assert.strictEqual(nf!.title, "Action failed")
      // The linked event is the signer's to read.
      const event = yield* alice.api.activity.get({ params: { eventId: nb!.relatedId! } })
      assert.strictEqual(event.status, "declined")
    }))

  it.effect("the entry and its alert commit together: a rolled-back caller leaves neither", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const recorder = yield* AuditRecorder
      const chain = yield* AuditChain
      const alice = yield* newUser
      const exit = yield* sql.withTransaction(
        Effect.andThen(recorder.recordDecline(decline(alice.accountId)), Effect.fail("caller failed" as const))
      ).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(yield* alice.api.notifications.list({ query: { unreadOnly: false } }), [])
      assert.deepStrictEqual(yield* chain.entries(alice.accountId), [])
      // A duplicate is refused without writing a second alert.
      const input = decline(alice.accountId)
      yield* recorder.recordDecline(input)
      const again = yield* recorder.recordDecline(input).pipe(Effect.flip)
      assert.strictEqual(again._tag, "AuditDuplicate")
      assert.strictEqual((yield* alice.api.notifications.list({ query: { unreadOnly: false } })).length, 1)
    }))

  it.effect("scoping: a signer sees, reads and clears only its own notifications", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const alice = yield* newUser
      const bob = yield* newUser
      yield* recorder.recordDecline(decline(alice.accountId))
      yield* recorder.recordDecline(decline(alice.accountId))
      yield* recorder.recordOutcome(outcome(bob.accountId))
      const aliceList = yield* alice.api.notifications.list({ query: { unreadOnly: false } })
      const bobList = yield* bob.api.notifications.list({ query: { unreadOnly: false } })
      assert.strictEqual(aliceList.length, 2)
      assert.strictEqual(bobList.length, 1)
      assert.isFalse(bobList.some((n) => aliceList.some((m) => m.id === n.id)))

      // Bob cannot read Alice's notification: 404, as if it did not exist; it stays unread.
      const refused = yield* bob.api.notifications.markRead({ params: { notificationId: aliceList[0]!.id } }).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "NotFound")
      const unknown = yield* bob.api.notifications.markRead({ params: { notificationId: "ntf_nope" } }).pipe(Effect.flip)
      assert.strictEqual(unknown._tag, "NotFound")
      assert.strictEqual((yield* alice.api.notifications.list({ query: { unreadOnly: true } })).length, 2)

      // Alice reads one: it comes back read, and unreadOnly leaves it out; reading again is harmless.
      const read = yield* alice.api.notifications.markRead({ params: { notificationId: aliceList[1]!.id } })
      assert.isTrue(read.read)
      assert.strictEqual(read.id, aliceList[1]!.id)
      const again = yield* alice.api.notifications.markRead({ params: { notificationId: aliceList[1]!.id } })
      assert.isTrue(again.read)
      const unread = yield* alice.api.notifications.list({ query: { unreadOnly: true } })
      assert.deepStrictEqual(unread.map((n) => n.id), [aliceList[0]!.id])

      // Bob's read-all leaves Alice's untouched; Alice's read-all is a 204 with an empty body.
      const bobAll = yield* post("/notifications/read-all", bob.token)
      assert.strictEqual(bobAll.status, 204)
      assert.strictEqual((yield* alice.api.notifications.list({ query: { unreadOnly: true } })).length, 1)
      const aliceAll = yield* post("/notifications/read-all", alice.token)
      assert.strictEqual(aliceAll.status, 204)
      assert.strictEqual(aliceAll.text, "")
      assert.deepStrictEqual(yield* alice.api.notifications.list({ query: { unreadOnly: true } }), [])
      const all = yield* alice.api.notifications.list({ query: { unreadOnly: false } })
      assert.isTrue(all.every((n) => n.read))
      // The typed client's read-all too.
      yield* bob.api.notifications.readAll()
    }))

  it.effect("unreadOnly defaults to false over the wire", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const alice = yield* newUser
      const r = yield* recorder.recordDecline(decline(alice.accountId))
      const n = (yield* alice.api.notifications.list({ query: { unreadOnly: false } }))[0]!
      yield* alice.api.notifications.markRead({ params: { notificationId: n.id } })
      const { baseUrl } = yield* TestServer
      const body = yield* Effect.promise(() =>
        fetch(`${baseUrl}/notifications`, { headers: { authorization: `Bearer ${alice.token}` } }).then((res) => res.json())
      ) as Effect.Effect<Array<{ relatedId: string; read: boolean }>>
      assert.deepStrictEqual(body.map((x) => [x.relatedId, x.read]), [[r.entry.id, true]])
    }))

  it("relative time labels", () => {
    const t = Date.parse("2026-01-10T12:00:00.000Z")
    assert.strictEqual(relativeLabel(new Date(t - 30_000), t), "just now")
    assert.strictEqual(relativeLabel(new Date(t - 5 * 60_000), t), "5 min ago")
    assert.strictEqual(relativeLabel(new Date(t - 3 * 3600_000), t), "3 h ago")
    assert.strictEqual(relativeLabel(new Date(t - 2 * 86_400_000), t), "2 d ago")
    assert.strictEqual(relativeLabel(new Date(t - 60 * 86_400_000), t), "2025-11-11")
  })
})
