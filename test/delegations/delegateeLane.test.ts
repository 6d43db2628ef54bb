/**
 * The delegatee's lane (issue 15, item 1): the holder of a grant lists what it holds with
 * its limits and what remains, and builds, signs and relays its own actions with its own
 * session — the owner's session is never needed. It sees nothing else of the owner's, and
 * nobody else sees or uses its grant (BOLA: another delegatee, the owner's other grants).
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { enabled, failure, newSession, relay, signOp, usdcBalance } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("the delegatee's lane", (it) => {
  it.effect("a holder lists, reads and uses its grant with its own session; nobody else can", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const agent = yield* newSession()
      const otherAgent = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      yield* mint("usd", owner.account.address as Hex, 50)
      const { created: held } = yield* enabled(owner, agent, { budget: 10, perAction: 4, maxActions: 5 })
      const { created: notHeld } = yield* enabled(owner, otherAgent, { budget: 10, perAction: 4, maxActions: 5 })

      // Listed with its limits and what remains; the holder's own (owner-role) list is empty.
      const holds = yield* agent.api.delegations.list({ query: { role: "delegatee" } })
      assert.deepStrictEqual(holds.map((d) => d.id), [held.id])
      assert.deepStrictEqual(holds[0]!.spentToDate.map((s) => [s.limit, s.spent, s.remaining]), [[10, 0, 10]])
      assert.lengthOf(yield* agent.api.delegations.list({ query: {} }), 0)
      assert.strictEqual((yield* agent.api.delegations.get({ params: { delegationId: held.id } })).id, held.id)

      // Built, signed and relayed on the agent's own session.
      const action = yield* agent.api.delegations.act({ params: { delegationId: held.id }, payload: { recipient, amount: 3 } })
      assert.strictEqual((yield* relay(agent.api, yield* signOp(agent.key, action.userOp))).outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 3_000_000n)
      const after = yield* agent.api.delegations.get({ params: { delegationId: held.id } })
      assert.deepStrictEqual(after.spentToDate.map((s) => [s.spent, s.remaining]), [[3, 7]])
      // Its limits hold on its lane too.
      const over = yield* failure(agent.api.delegations.act({ params: { delegationId: held.id }, payload: { recipient, amount: 5 } }))
      assert.deepStrictEqual([over.tag, over.reason], ["OutOfScope", "per_action_exceeded"])

      // Nothing else: the owner's other grant, another holder's use, the revoke (the owner's kill-switch).
      for (const e of [
        yield* failure(agent.api.delegations.get({ params: { delegationId: notHeld.id } })),
        yield* failure(agent.api.delegations.act({ params: { delegationId: notHeld.id }, payload: { recipient, amount: 1 } })),
        yield* failure(otherAgent.api.delegations.get({ params: { delegationId: held.id } })),
        yield* failure(otherAgent.api.delegations.act({ params: { delegationId: held.id }, payload: { recipient, amount: 1 } })),
        yield* failure(agent.api.delegations.revoke({ params: { delegationId: held.id } }))
      ]) {
        assert.strictEqual(e.tag, "NotFound")
      }
      assert.deepStrictEqual((yield* otherAgent.api.delegations.list({ query: { role: "delegatee" } })).map((d) => d.id), [notHeld.id])

      // The owner's lane keeps working on the same grant.
      const ownerBuilt = yield* owner.api.delegations.act({ params: { delegationId: held.id }, payload: { recipient, amount: 1 } })
      assert.strictEqual((yield* relay(agent.api, yield* signOp(agent.key, ownerBuilt.userOp))).outcome, "mined")
      assert.deepStrictEqual((yield* owner.api.delegations.get({ params: { delegationId: held.id } })).spentToDate.map((s) => s.spent), [4])
    }))
})
