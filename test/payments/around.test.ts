/**
 * x402 payments the service did not see happen: a grant made through the service, its agent
 * signing payments itself (around the service) and the facilitator's key redeeming them
 * straight on chain. Beyond the grant's limits the chain refuses (mined, reverted, nothing
 * moved) and nothing is recorded; within them the follower records what moved, once. A
 * payment authorized by one process and settled while no follower ran is recorded by the
 * processes that come after, once, with the resource the first one kept.
 */
import { afterAll, assert, beforeAll, describe, layer } from "@effect/vitest"
import { it as itLive } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Address } from "viem"
import { makeClient } from "../../src/client/Client.ts"
import { transferExecution } from "@das/x402-erc7710"
import { testNetworks } from "../support/TestChain.ts"
import { Chains } from "../../src/chain/Chains.ts"
import { testDatabaseName } from "../support/TestDatabase.ts"
import { startInstance, TestServer, TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { failure, relay, signOp } from "../delegations/helpers.ts"
import { heldFor, ownerAndAgent, reservationsOf } from "./support.ts"
import { acceptedOnChain, chainNow, refusedOnChain, signPayment, type Watch } from "./x402/attacker.ts"
import { paymentOf, requirementOf, startWorld, USD, usdc, type World } from "./x402/support.ts"

process.env.DO_NOT_TRACK = "1"

let world: World
beforeAll(async () => {
  world = await startWorld()
}, 60_000)
afterAll(async () => {
  await world?.close()
})

const lower = (s: string) => s.toLowerCase()

layer(TestServerLive(), { timeout: Duration.seconds(180), excludeTestServices: true })("x402 around the service", (it) => {
  it.effect("beyond the grant's per-action cap or budget the chain refuses the facilitator's own redemption; within them it is recorded once", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address, { budget: 0.5, perAction: 0.3 })
      const owner = p.owner.account.address as Address
      const watch: Watch = { tokens: [usdc], holders: [owner, world.merchant] }
      const terms = async (amount: bigint) => ({ scheme: "exact" as const, asset: usdc, payTo: world.merchant, amount, validBefore: (await chainNow()) + 60 })

      // Over the per-action cap: the service would decline; signed around it, the chain refuses.
      const over = yield* Effect.promise(async () => signPayment(p.context, p.agent, await terms(USD(0.3) + 1n), world.facilitator.address))
      yield* Effect.promise(() =>
        refusedOnChain(watch, world.facilitatorKey, over.permissionContext, transferExecution(usdc, world.merchant, USD(0.3) + 1n), "TransferCapEnforcer:amount-exceeded")
      )

      // Within: signed around the service, settled by the facilitator; the follower records it.
      const within = yield* Effect.promise(async () => signPayment(p.context, p.agent, await terms(USD(0.3)), world.facilitator.address))
      const first = yield* Effect.promise(() => acceptedOnChain(world.facilitatorKey, within.permissionContext, transferExecution(usdc, world.merchant, USD(0.3))))
      const payment = yield* waitFor("the payment recorded", p.owner.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
        Effect.orDie,
        Effect.map((list) => list.find((x) => x.status === "settled"))
      ))
      assert.strictEqual(payment.txHash, lower(first.hash))
      assert.strictEqual(payment.settledUnits, USD(0.3).toString())
      assert.isUndefined(payment.resource, "the service never saw what it paid for")
      const rsv = yield* reservationsOf(p.grantId)
      assert.deepStrictEqual(rsv.map((r) => [r.status, r.units, r.tx_hash]), [["final", USD(0.3).toString(), lower(first.hash)]])
      const entry = yield* p.owner.api.activity.get({ params: { eventId: payment.auditEventId! } })
      assert.deepStrictEqual([entry.action, entry.actor, entry.amount, entry.recipient], ["x402_payment", lower(world.facilitator.address), 0.3, lower(world.merchant)])

      // Now over the budget (0.3 spent of 0.5): the service declines, and around it the chain refuses.
      const declined = yield* p.agentSession.api.payments.authorize({
        payload: {
          delegationId: p.grantId,
          requirement: { ...requirementOf(world, { scheme: "exact", amount: USD(0.25) }), extra: { assetTransferMethod: "erc7710", facilitatorAddress: world.facilitator.address } },
          resource: { url: "https://api.example/more" }
        }
      }).pipe(Effect.flip)
      assert.strictEqual((declined as unknown as { declineReason: string }).declineReason, "cap_exceeded")
      const overBudget = yield* Effect.promise(async () => signPayment(p.context, p.agent, await terms(USD(0.25)), world.facilitator.address))
      yield* Effect.promise(() =>
        refusedOnChain(watch, world.facilitatorKey, overBudget.permissionContext, transferExecution(usdc, world.merchant, USD(0.25)), "MultiTokenPeriodEnforcer:transfer-amount-exceeded")
      )
      // The same payment again: the chain refuses (single use).
      yield* Effect.promise(() =>
        refusedOnChain(watch, world.facilitatorKey, within.permissionContext, transferExecution(usdc, world.merchant, USD(0.3)), "LimitedCallsEnforcer:limit-exceeded")
      )
      yield* Effect.sleep(Duration.seconds(1))
      assert.deepStrictEqual(yield* heldFor(p.grantId), { payments: 1, reservations: 1 }, "reverted redemptions are not payments")
      const log = yield* p.owner.api.activity.list({ query: { limit: 50, delegationId: p.grantId } })
      assert.lengthOf(log.items.filter((e) => e.action === "x402_payment" && e.status === "executed"), 1)
    }))

  it.effect("a payment authorized before the owner revokes the grant cannot settle after it; new ones are declined", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address)
      const owner = p.owner.account.address as Address
      const requirements = requirementOf(world, { scheme: "exact", amount: USD(0.1) })
      const payload = yield* Effect.promise(() =>
        p.authorizer.authorize({
          requirement: { scheme: "exact", chainId: 31337, asset: usdc, payTo: world.merchant, amount: USD(0.1), maxTimeoutSeconds: 60, facilitator: world.facilitator.address },
          validBefore: 0,
          resource: { url: "https://api.example/before-revoke" }
        })
      )
      const revoke = yield* p.owner.api.delegations.revoke({ params: { delegationId: p.grantId } })
      assert.strictEqual((yield* relay(p.owner.api, yield* signOp(p.owner.key, revoke.userOp))).outcome, "mined")

      // The facilitator's verify refuses (its simulation), and its own redemption reverts on chain.
      const verified = yield* Effect.promise(() => world.facilitator.facilitator.verify(paymentOf(requirements, payload), requirements))
      assert.isFalse(verified.isValid)
      assert.include(verified.invalidMessage, "CannotUseADisabledDelegation")
      const watch: Watch = { tokens: [usdc], holders: [owner, world.merchant] }
      yield* Effect.promise(() =>
        refusedOnChain(watch, world.facilitatorKey, payload.permissionContext, transferExecution(usdc, world.merchant, USD(0.1)), "CannotUseADisabledDelegation")
      )
      const declined = yield* failure(p.agentSession.api.payments.authorize({
        payload: {
          delegationId: p.grantId,
          requirement: { ...requirements, extra: { assetTransferMethod: "erc7710", facilitatorAddress: world.facilitator.address } },
          resource: { url: "https://api.example/after-revoke" }
        }
      }))
      assert.strictEqual(declined.reason, "revoked")
      yield* Effect.sleep(Duration.seconds(1))
      const [only] = yield* p.owner.api.payments.list({ query: { delegationId: p.grantId } })
      assert.strictEqual(only?.resource?.url, "https://api.example/before-revoke")
      assert.notStrictEqual(only?.status, "settled")
    }))

  it.effect("an authorized payment never settled holds its reservation only until its deadline", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address, { budget: 0.5, perAction: 0.5 })
      const authorized = yield* p.agentSession.api.payments.authorize({
        payload: {
          delegationId: p.grantId,
          requirement: { ...requirementOf(world, { scheme: "exact", amount: USD(0.4), maxTimeoutSeconds: 2 }), extra: { assetTransferMethod: "erc7710", facilitatorAddress: world.facilitator.address } },
          resource: { url: "https://api.example/never" }
        }
      })
      assert.strictEqual(authorized.payment.status, "authorized")
      const held = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
      assert.closeTo(held.spentToDate[0]!.remaining, 0.1, 1e-9)
      yield* Effect.sleep(Duration.millis(3_000))
      const [expired] = yield* p.owner.api.payments.list({ query: { delegationId: p.grantId, status: "expired" } })
      assert.strictEqual(expired?.id, authorized.payment.id)
      const after = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
      assert.closeTo(after.spentToDate[0]!.remaining, 0.5, 1e-9)
    }))
})

describe("x402 settlement while no follower ran", () => {
  itLive.live("a payment authorized by a process that is gone, settled while none ran, is recorded once by the two that follow", () =>
    Effect.gen(function*() {
      const name = testDatabaseName()
      const a = yield* startInstance({ database: { name } })
      const p = yield* ownerAndAgent(world.facilitator.address).pipe(Effect.provideService(TestServer, { baseUrl: a.baseUrl, metricsUrl: "", facilitatorUrl: undefined }))
      const requirements = requirementOf(world, { scheme: "exact", amount: USD(0.2) })
      const payload = yield* Effect.promise(() =>
        p.authorizer.authorize({
          requirement: { scheme: "exact", chainId: 31337, asset: usdc, payTo: world.merchant, amount: USD(0.2), maxTimeoutSeconds: 60, facilitator: world.facilitator.address },
          validBefore: 0,
          resource: { url: "https://api.example/while-down" }
        })
      )
      const rows = (sql: SqlClient.SqlClient) =>
        sql<{ status: string }>`SELECT status FROM x402_payments WHERE delegation_id = ${p.grantId}`.pipe(Effect.orDie)
      assert.deepStrictEqual((yield* rows(a.sql)).map((r) => r.status), ["authorized"])
      // A's follower has read the chain up to here; then A is gone.
      yield* waitFor("A's follower cursor", a.sql<{ n: string }>`SELECT count(*)::text AS n FROM chain_cursor`.pipe(
        Effect.orDie,
        Effect.map((r) => (r[0]!.n === "0" ? undefined : true))
      ))
      yield* a.stop

      // Settled while no process runs (and whoever asked never reads the answer).
      const settled = yield* Effect.promise(() => world.facilitator.facilitator.settle(paymentOf(requirements, payload), requirements))
      assert.isTrue(settled.success, settled.errorMessage)

      // Two processes start on the same database; their followers catch up from A's cursor.
      const b = yield* startInstance({ database: { name, create: false } })
      const c = yield* startInstance({ database: { name, create: false } })
      const api = yield* makeClient({ baseUrl: c.baseUrl, token: p.token })
      const payment = yield* waitFor("the payment settled", api.payments.list({ query: { delegationId: p.grantId } }).pipe(
        Effect.orDie,
        Effect.map((list) => list.find((x) => x.status === "settled"))
      ))
      assert.strictEqual(payment.resource?.url, "https://api.example/while-down")
      assert.strictEqual(payment.txHash, lower(settled.transaction))
      yield* Effect.sleep(Duration.seconds(1))
      assert.deepStrictEqual((yield* rows(b.sql)).map((r) => r.status), ["settled"])
      const reservations = yield* b.sql<{ status: string; units: string }>`
        SELECT status, units::text AS units FROM delegation_reservations WHERE delegation_id = ${p.grantId}`.pipe(Effect.orDie)
      assert.deepStrictEqual(reservations.map((r) => [r.status, r.units]), [["final", USD(0.2).toString()]])
      const entries = yield* b.sql<{ n: string }>`
        SELECT count(*)::text AS n FROM audit_entries WHERE delegation_id = ${p.grantId} AND action = 'x402_payment'`.pipe(Effect.orDie)
      assert.strictEqual(entries[0]!.n, "1")
      yield* b.stop
      yield* c.stop
    }).pipe(Effect.provide(Chains.single().pipe(Layer.provideMerge(Chains.fromNetworks(testNetworks()))))), { timeout: 180_000 })
})

