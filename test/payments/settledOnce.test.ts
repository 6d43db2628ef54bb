/**
 * A payment the chain shows settled is counted once in `spentToDate`, before the follower records
 * it (issue 43, h43 item 5): the service runs without a follower (`FOLLOWER_INTERVAL` 0), the
 * facilitator settles an authorized `exact` payment on chain, and the grant reads it as spent and
 * no longer as reserved; an authorized payment not settled stays reserved beside it. Its
 * reservation is still open in the ledger (only the follower closes it), and what the chain holds
 * of the budget agrees with `left`.
 */
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address } from "viem"
import { checkRequirement } from "@das/x402-erc7710"
import { TestServerLive } from "../support/TestServer.ts"
import { ownerAndAgent, reservationsOf } from "./support.ts"
import { chainNow } from "./x402/attacker.ts"
import { balanceOf, paymentOf, requirementOf, scope, startWorld, USD, usdc, type World } from "./x402/support.ts"

process.env.DO_NOT_TRACK = "1"

let world: World
beforeAll(async () => {
  world = await startWorld()
}, 60_000)
afterAll(async () => {
  await world?.close()
})

layer(TestServerLive({ config: { FOLLOWER_INTERVAL: "0 seconds" } }), { timeout: Duration.seconds(180), excludeTestServices: true })(
  "x402: a settled payment counted once",
  (it) => {
    it.effect("settled on chain, not yet recorded: spent once, no longer reserved; an unsettled one stays reserved", () =>
      Effect.gen(function*() {
        const p = yield* ownerAndAgent(world.facilitator.address, { budget: 1, perAction: 0.5 })
        const owner = p.owner.account.address as Address
        const authorize = (amount: bigint) =>
          Effect.promise(async () => {
            const requirements = requirementOf(world, { scheme: "exact", amount })
            const checked = checkRequirement(requirements, scope, amount)
            if (!checked.ok) throw new Error(checked.refused.message)
            const payload = await p.authorizer.authorize({
              requirement: checked.value,
              validBefore: (await chainNow()) + 120,
              resource: { url: `${world.resource.url}/report` }
            })
            return { requirements, payload }
          })
        const spentOf = Effect.map(p.owner.api.delegations.get({ params: { delegationId: p.grantId } }), (d) => d.spentToDate[0]!)

        const settled = yield* authorize(USD(0.3))
        const pending = yield* authorize(USD(0.2))
        const before = yield* spentOf
        assert.closeTo(before.spent, 0, 1e-9)
        assert.closeTo(before.reserved!, 0.5, 1e-9)
        assert.closeTo(before.remaining, 0.5, 1e-9)

        const ownerBefore = yield* Effect.promise(() => balanceOf(usdc, owner))
        const result = yield* Effect.promise(() =>
          world.facilitator.facilitator.settle(paymentOf(settled.requirements, settled.payload), settled.requirements)
        )
        assert.isTrue(result.success, result.errorMessage)
        assert.strictEqual(ownerBefore - (yield* Effect.promise(() => balanceOf(usdc, owner))), USD(0.3))

        // No follower ran: both reservations are still open in the service's ledger.
        const rows = yield* reservationsOf(p.grantId)
        assert.deepStrictEqual(rows.map((r) => r.status).sort(), ["reserved", "reserved"])

        // Counted once: 0.3 spent (the chain's), 0.2 reserved (the unsettled one), 0.5 left; not 0.3 + 0.5.
        const after = yield* spentOf
        assert.closeTo(after.spent, 0.3, 1e-9)
        assert.closeTo(after.reserved!, 0.2, 1e-9)
        assert.closeTo(after.remaining, 0.5, 1e-9)
        // The agent's own view of the grant says the same.
        const seen = yield* p.agentSession.api.delegations.get({ params: { delegationId: p.grantId } })
        assert.closeTo(seen.spentToDate[0]!.spent, 0.3, 1e-9)
        assert.closeTo(seen.spentToDate[0]!.reserved!, 0.2, 1e-9)

        // The unsettled one settles too: 0.5 spent, nothing reserved, 0.5 left.
        const second = yield* Effect.promise(() =>
          world.facilitator.facilitator.settle(paymentOf(pending.requirements, pending.payload), pending.requirements)
        )
        assert.isTrue(second.success, second.errorMessage)
        const last = yield* spentOf
        assert.closeTo(last.spent, 0.5, 1e-9)
        assert.closeTo(last.reserved!, 0, 1e-9)
        assert.closeTo(last.remaining, 0.5, 1e-9)
      }), { timeout: 180_000 })
  }
)
