/**
 * The activity endpoints over real HTTP (typed client), with entries recorded
 * through `AuditRecorder` on the server's own database.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { EntryNotifierLive } from "../../src/notifications/EntryNotifier.ts"
import { AuditLive, AuditRecorder } from "../../src/audit/Recorder.ts"
import { signIn } from "../../src/client/signIn.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { decline, declined, executed, outcome } from "../audit/support.ts"

const Live = AuditLive.pipe(Layer.provide(EntryNotifierLive), Layer.provideMerge(TestServerLive()))

const newUser = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
  const api = yield* client(session.token)
  return { session, api, accountId: session.accounts[0]!.id, token: session.token }
})

const getJson = (path: string, token: string) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    return yield* Effect.promise(async () => {
      const res = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } })
      return { status: res.status, body: await res.json() as { error?: { code: string }; items?: ReadonlyArray<unknown> } }
    })
  })

layer(Live, { excludeTestServices: true })("activity", (it) => {
  it.effect("lists newest first with the hash-chain fields; an event reads back by id; anchor counts everything", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const { accountId, api } = yield* newUser
      const a = yield* recorder.recordOutcome(outcome(accountId))
      const b = yield* recorder.recordDecline(decline(accountId))
      const page = yield* api.activity.list({ query: { limit: 25 } })
      assert.deepStrictEqual(page.items.map((e) => e.id), [b.entry.id, a.entry.id])
      assert.deepStrictEqual(page.pageInfo, { hasMore: false })
      const [db, da] = page.items
      assert.strictEqual(da!.status, "executed")
      assert.strictEqual(da!.auditNonce, 1)
      assert.strictEqual(da!.provenance, "onchain")
      assert.strictEqual(da!.txHash, a.entry.txHash!)
      assert.strictEqual(da!.amount, 12.5)
      assert.strictEqual(da!.token, "USDC")
      assert.strictEqual(da!.hash, a.entry.hash)
      assert.strictEqual(db!.status, "declined")
      assert.strictEqual(db!.declineReason, "cap_exceeded")
      assert.strictEqual(db!.provenance, "offchain_only")
      assert.isUndefined(db!.auditNonce)
      assert.isUndefined(db!.txHash)
      assert.strictEqual(db!.prevHash, a.entry.hash)
      assert.match(db!.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

      const one = yield* api.activity.get({ params: { eventId: b.entry.id } })
      assert.deepStrictEqual(one, db)
      // Each account with entries, and the length an anchor covers (none yet): no proof to ask for.
      assert.deepStrictEqual(yield* api.activity.anchor(), { available: true, unanchoredCount: 2, accounts: [{ accountId, anchoredLength: 0 }] })
    }))

  it.effect("another signer's event and account are answered as if they did not exist", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const alice = yield* newUser
      const bob = yield* newUser
      const rec = yield* recorder.recordOutcome(outcome(alice.accountId))
      const error = yield* bob.api.activity.get({ params: { eventId: rec.entry.id } }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "NotFound")
      const unknown = yield* bob.api.activity.get({ params: { eventId: "evt_nope" } }).pipe(Effect.flip)
      assert.strictEqual(unknown._tag, "NotFound")
      const scoped = yield* bob.api.activity.list({ query: { limit: 25, accountId: alice.accountId } }).pipe(Effect.flip)
      assert.strictEqual(scoped._tag, "NotFound")
      assert.deepStrictEqual((yield* bob.api.activity.list({ query: { limit: 25 } })).items, [])
      assert.deepStrictEqual(yield* bob.api.activity.anchor(), { available: true, unanchoredCount: 0, accounts: [] })
    }))

  it.effect("`anchor` is never taken as an event id", () =>
    Effect.gen(function*() {
      const { token } = yield* newUser
      const res = yield* getJson("/activity/anchor", token)
      assert.strictEqual(res.status, 200)
      assert.deepStrictEqual(res.body as unknown, { available: true, unanchoredCount: 0, accounts: [] })
    }))

  it.effect("filters: status, delegationId, from/to, accountId", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const { accountId, api } = yield* newUser
      const second = yield* api.accounts.createAccount({ payload: { label: "Savings" } })
      const x1 = yield* recorder.recordOutcome(outcome(accountId, { delegationId: "del_a" }))
      yield* Effect.sleep("20 millis")
      const x2 = yield* recorder.recordDecline(decline(accountId, { delegationId: "del_b", declineReason: "per_action_exceeded" }))
      yield* Effect.sleep("20 millis")
      const x3 = yield* recorder.recordOutcome(
        outcome(accountId, { delegationId: "del_a", txHash: undefined, status: "failed", declineReason: "rejected by the bundler" })
      )
      const y1 = yield* recorder.recordOutcome(outcome(second.id))

      const ids = (q: Omit<Parameters<typeof api.activity.list>[0]["query"], "limit">) =>
        Effect.map(api.activity.list({ query: { limit: 25, ...q } }), (p) => p.items.map((e) => e.id))
      assert.deepStrictEqual(yield* ids({ status: "declined" }), [x2.entry.id])
      assert.deepStrictEqual(yield* ids({ status: "failed" }), [x3.entry.id])
      assert.deepStrictEqual(yield* ids({ delegationId: "del_a" }), [x3.entry.id, x1.entry.id])
      assert.deepStrictEqual(yield* ids({ delegationId: "del_a", status: "executed" }), [x1.entry.id])
      const t = (e: { timestamp: string }) => e.timestamp.replace(/(\.\d{3})\d{3}Z$/, "$1Z")
      // `from` inclusive, `to` exclusive.
      assert.deepStrictEqual(yield* ids({ from: t(x2.entry), to: t(x3.entry) }), [x2.entry.id])
      assert.deepStrictEqual(yield* ids({ from: t(x2.entry) }), [x3.entry.id, x2.entry.id])
      assert.deepStrictEqual(yield* ids({ to: t(x2.entry) }), [x1.entry.id])
      // Each account has its own chain and feed.
      assert.deepStrictEqual(yield* ids({ accountId: second.id }), [y1.entry.id])
      assert.strictEqual(y1.entry.index, 1)
      assert.deepStrictEqual(yield* api.activity.anchor(), {
        available: true,
        unanchoredCount: 4,
        accounts: [accountId, second.id].sort().map((id) => ({ accountId: id, anchoredLength: 0 }))
      })
    }))

  it.effect("a malformed cursor, or another list's cursor, or from after to is a 400", () =>
    Effect.gen(function*() {
      const recorder = yield* AuditRecorder
      const { accountId, api, token } = yield* newUser
      const second = yield* api.accounts.createAccount({ payload: {} })
      for (let i = 0; i < 3; i++) {
        yield* recorder.recordOutcome(outcome(accountId))
      }
      const page = yield* api.activity.list({ query: { limit: 1 } })
      assert.isTrue(page.pageInfo.hasMore)
      const wrong = yield* api.activity.list({ query: { limit: 1, accountId: second.id, cursor: page.pageInfo.nextCursor! } }).pipe(Effect.flip)
      assert.strictEqual(wrong._tag, "BadRequest")
      const garbage = yield* getJson("/activity?cursor=%%%", token)
      assert.strictEqual(garbage.status, 400)
      assert.strictEqual(garbage.body.error?.code, "bad_request")
      const backwards = yield* getJson("/activity?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", token)
      assert.strictEqual(backwards.status, 400)
      // Shaped like a timestamp but not a date (month 13, day 32): a 400, never a 500.
      for (const q of ["from=2026-13-01T00:00:00Z", "to=2026-01-32T00:00:00Z"]) {
        const impossible = yield* getJson(`/activity?${q}`, token)
        assert.strictEqual(impossible.status, 400, q)
        assert.strictEqual(impossible.body.error?.code, "bad_request", q)
      }
    }))

  describe("pagination", () => {
    it.effect("default limit 25; pages never repeat or skip while entries are appended", () =>
      Effect.gen(function*() {
        const chain = yield* AuditChain
        const { accountId, api, token } = yield* newUser
        yield* Effect.forEach(
          Array.from({ length: 60 }, (_, i) => i),
          (i) => chain.append(i % 3 === 0 ? declined(accountId, `dec_p_${accountId}_${i}`) : executed(accountId, `op_p_${accountId}_${i}`)),
          { concurrency: 8 }
        )
        // No limit given: 25.
        const first = yield* getJson("/activity", token)
        assert.strictEqual(first.status, 200)
        assert.strictEqual(first.body.items?.length, 25)
        const before = new Set((yield* chain.entries(accountId)).map((e) => e.id))

        // A background writer, plus appends racing every page request.
        let late = 0
        const appendLate = (n: number) =>
          Effect.suspend(() => Effect.forEach(
            Array.from({ length: n }, () => late++),
            (i) => chain.append(executed(accountId, `op_late_${accountId}_${i}`)),
            { concurrency: "unbounded" }
          ))
        const writer = yield* appendLate(1).pipe(
          Effect.andThen(Effect.sleep("3 millis")),
          Effect.repeat({ times: 19 }),
          Effect.forkChild
        )

        const seen: Array<string> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const [page] = yield* Effect.all([
            api.activity.list({ query: { limit: 7, ...(cursor === undefined ? {} : { cursor }) } }),
            appendLate(3)
          ], { concurrency: 2 })
          seen.push(...page.items.map((e) => e.id))
          cursor = page.pageInfo.nextCursor
          assert.strictEqual(page.pageInfo.hasMore, cursor !== undefined)
          pages++
        } while (cursor !== undefined)
        yield* Fiber.join(writer)

        assert.strictEqual(new Set(seen).size, seen.length, "an entry was repeated across pages")
        for (const id of before) assert.isTrue(seen.includes(id), `entry ${id} was skipped`)
        // Strictly newest first: each entry's predecessor in the list is the next-newer entry's prevHash.
        const all = yield* chain.entries(accountId)
        const byId = new Map(all.map((e) => [e.id, e]))
        const indexes = seen.map((id) => byId.get(id)!.index)
        for (let i = 1; i < indexes.length; i++) assert.strictEqual(indexes[i], indexes[i - 1]! - 1)
        assert.strictEqual(indexes.at(-1), 1)
        assert.isAtLeast(pages, Math.ceil(60 / 7))
        // The chain grew while it was being paged.
        assert.isAbove(all.length, seen.length)
        assert.isTrue((yield* chain.verify(accountId)).ok)
      }))
  })
})
