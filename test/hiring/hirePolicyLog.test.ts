/**
 * The hire policy in the owner's log (issue 44): each `PUT /marketplace/hire-policy` that changes
 * the policy is an entry of the owner's tamper-evident log, read back over `GET /activity` with
 * the policy before and after; a refused policy stores nothing and logs nothing; the entry's
 * hash covers the before/after.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { hashRecord } from "../../src/audit/Chain.ts"
import { recordOfEvent } from "../../src/audit/Wire.ts"
import { HIRE_POLICY_ACTION } from "../../src/hiring/PolicyLog.ts"
import { newSession } from "../delegations/helpers.ts"
import { TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const parsed = (key: string) => {
  const m = /^hire-policy:[0-9a-f-]{36} before (\{.*\}) after (\{.*\})$/.exec(key)
  assert.isNotNull(m, key)
  return { before: JSON.parse(m![1]!), after: JSON.parse(m![2]!) }
}

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("the hire policy in the owner's log", (it) => {
  it.effect("each change is an entry with the policy before and after; a refused one logs nothing", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const other = yield* newSession()
      const reviewer = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      const entries = Effect.map(owner.api.activity.list({ query: { limit: 100 } }), (page) =>
        page.items.filter((e) => e.action === HIRE_POLICY_ACTION).reverse())

      assert.deepStrictEqual(yield* entries, [], "nothing before the first change")
      yield* owner.api.hiring.setHirePolicy({ payload: { requireRegistered: true } })
      yield* owner.api.hiring.setHirePolicy({
        payload: { requireRegistered: true, minReputation: "80.50", reputationClients: [reviewer as `0x${string}`] }
      })
      // Refused (a floor without reviewers): nothing stored, nothing logged.
      const bad = yield* owner.api.hiring.setHirePolicy({ payload: { requireRegistered: true, minReputation: "90" } }).pipe(Effect.flip)
      assert.strictEqual(bad._tag, "BadRequest")
      // Another signer's change is on its own log, not this owner's.
      yield* other.api.hiring.setHirePolicy({ payload: { requireRegistered: true } })

      const logged = yield* entries
      assert.strictEqual(logged.length, 2, JSON.stringify(logged))
      for (const e of logged) {
        assert.strictEqual(e.actor, "owner")
        assert.strictEqual(e.status, "accepted")
        assert.strictEqual(e.provenance, "offchain_only")
      }
      assert.deepStrictEqual(parsed(logged[0]!.declineId!), {
        before: { requireRegistered: false, reputationClients: [] },
        after: { requireRegistered: true, reputationClients: [] }
      })
      assert.deepStrictEqual(parsed(logged[1]!.declineId!), {
        before: { requireRegistered: true, reputationClients: [] },
        after: { requireRegistered: true, minReputation: "80.5", reputationClients: [reviewer] }
      })
      assert.deepStrictEqual(yield* owner.api.hiring.getHirePolicy().pipe(Effect.map(({ updatedAt: _, ...p }) => p)), {
        requireRegistered: true,
        minReputation: "80.5",
        reputationClients: [reviewer]
      })
      // The before/after is hashed into the account's chain: each entry's hash is that of its fields,
      // the second links to the first, so an edited policy text breaks the chain.
      for (const e of logged) assert.strictEqual(hashRecord(recordOfEvent(e)), e.hash)
      assert.strictEqual(hashRecord({ ...recordOfEvent(logged[1]!), declineId: logged[0]!.declineId! }) === logged[1]!.hash, false)
      const read = yield* owner.api.activity.get({ params: { eventId: logged[1]!.id } })
      assert.strictEqual(read.declineId, logged[1]!.declineId)
      const theirs = yield* other.api.activity.list({ query: { limit: 100 } })
      assert.strictEqual(theirs.items.filter((e) => e.action === HIRE_POLICY_ACTION).length, 1)
    }))
})
