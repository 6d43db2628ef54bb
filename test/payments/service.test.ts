/**
 * x402 through the service, end to end on the run's local chain: an agent holding a grant
 * (made through the service) fetches a paid resource from a resource server on
 * @x402/express, its one-line fetch (@x402/fetch + the ERC-7710 client scheme) asking the
 * service what to sign (POST /payments/x402), settled by the facilitator (@x402/core's
 * facilitator) with `redeemDelegations`. The chain follower records the settlement from the
 * transaction: the payment settled with what moved, its reservation final with that amount,
 * the owner's log (`x402_payment`, actor the facilitator) and notification; balances read on
 * chain match. `upto` debits what was settled, not the ceiling.
 */
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address } from "viem"
import { Network } from "../../src/chain/Network.ts"
import { settlementOf } from "@das/x402-erc7710"
import { failure } from "../delegations/helpers.ts"
import { waitFor } from "../support/waitFor.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { heldFor, ownerAndAgent, reservationsOf } from "./support.ts"
import { balanceOf, startWorld, USD, usdc, type World } from "./x402/support.ts"

process.env.DO_NOT_TRACK = "1"

let world: World
beforeAll(async () => {
  world = await startWorld()
}, 60_000)
afterAll(async () => {
  await world?.close()
})

const lower = (s: string) => s.toLowerCase()

layer(TestServerLive(), { timeout: Duration.seconds(180), excludeTestServices: true })("x402 through the service", (it) => {
  it.effect("an agent pays exact through the service: 200 and the report; the follower records what the chain shows", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address)
      const owner = p.owner.account.address as Address
      const before = { owner: yield* Effect.promise(() => balanceOf(usdc, owner)), merchant: yield* Effect.promise(() => balanceOf(usdc, world.merchant)) }

      const res = yield* Effect.promise(() => p.pay(`${world.resource.url}/report`, { maxAmount: USD(0.05) }))
      assert.strictEqual(res.status, 200)
      assert.deepStrictEqual(yield* Effect.promise(() => res.json()), { report: "all systems nominal", price: USD(0.01).toString() })
      const settled = settlementOf(res)!
      assert.isTrue(settled.success)
      assert.match(settled.transaction, /^0x[0-9a-f]{64}$/)

      // What the chain shows: exactly the price moved from the owner's account to the merchant.
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before.owner - USD(0.01))
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, world.merchant)), before.merchant + USD(0.01))

      // The payment as the follower recorded it, on both lanes.
      const payment = yield* waitFor("the payment settled", p.owner.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
        Effect.orDie,
        Effect.map((list) => list.find((x) => x.status === "settled"))
      ))
      assert.strictEqual(payment.scheme, "exact")
      assert.strictEqual(payment.amount, USD(0.01).toString())
      assert.strictEqual(payment.settledUnits, USD(0.01).toString())
      assert.strictEqual(payment.settledAmount, 0.01)
      assert.strictEqual(payment.token, "USDC")
      assert.strictEqual(lower(payment.payTo), lower(world.merchant))
      assert.strictEqual(lower(payment.facilitator), lower(world.facilitator.address))
      assert.strictEqual(payment.txHash, lower(settled.transaction))
      assert.strictEqual(payment.resource?.url, `${world.resource.url}/report`)
      assert.strictEqual(payment.resource?.description, "Today's report")
      const asAgent = yield* p.agentSession.api.payments.get({ params: { paymentId: payment.id } })
      assert.deepStrictEqual(asAgent, payment)

      // Its reservation is final with what moved and the transaction.
      const rsv = yield* reservationsOf(p.grantId)
      assert.deepStrictEqual(rsv.map((r) => [r.id, r.status, r.units, r.tx_hash]), [[payment.reservationId!, "final", USD(0.01).toString(), lower(settled.transaction)]])

      // The owner's log: one x402_payment entry, the facilitator as actor, what moved and where.
      const entry = yield* p.owner.api.activity.get({ params: { eventId: payment.auditEventId! } })
      assert.strictEqual(entry.action, "x402_payment")
      assert.strictEqual(entry.status, "executed")
      assert.strictEqual(entry.actor, lower(world.facilitator.address))
      assert.strictEqual(entry.amount, 0.01)
      assert.strictEqual(entry.token, "USDC")
      assert.strictEqual(entry.recipient, lower(world.merchant))
      assert.strictEqual(entry.txHash, lower(settled.transaction))
      assert.strictEqual(entry.delegationId, p.grantId)
      const log = yield* p.owner.api.activity.list({ query: { limit: 50, delegationId: p.grantId } })
      assert.lengthOf(log.items.filter((e) => e.txHash === lower(settled.transaction)), 1, "one entry for the settlement")
      const notes = yield* p.owner.api.notifications.list({ query: { unreadOnly: false } })
      const note = notes.find((n) => n.relatedId === entry.id)
      assert.isDefined(note)
      assert.include(note!.body, "x402_payment of 0.01 USDC executed")

      // The grant's budget is debited what moved.
      const grant = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
      const usd = grant.spentToDate.find((s) => s.token.symbol === "USDC")!
      assert.strictEqual(usd.spent, 0.01)
      assert.closeTo(usd.remaining, 0.99, 1e-9)
    }))

  it.effect("upto: the budget is debited what the server settled, not the ceiling signed", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address, { budget: 2, perAction: 1 })
      const owner = p.owner.account.address as Address
      const before = yield* Effect.promise(() => balanceOf(usdc, owner))
      const res = yield* Effect.promise(() => p.pay(`${world.resource.url}/metered?units=3`, { maxAmount: USD(1) }))
      assert.strictEqual(res.status, 200)
      const settled = settlementOf(res)!
      assert.strictEqual(settled.amount, USD(0.15).toString())
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before - USD(0.15))

      const payment = yield* waitFor("the payment settled", p.agentSession.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
        Effect.orDie,
        Effect.map((list) => list.find((x) => x.status === "settled"))
      ))
      assert.strictEqual(payment.scheme, "upto")
      assert.strictEqual(payment.amount, USD(1).toString(), "the ceiling signed")
      assert.strictEqual(payment.settledUnits, USD(0.15).toString(), "what moved")
      const rsv = yield* reservationsOf(p.grantId)
      assert.deepStrictEqual(rsv.map((r) => [r.status, r.units]), [["final", USD(0.15).toString()]])
      const grant = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
      const usd = grant.spentToDate.find((s) => s.token.symbol === "USDC")!
      assert.closeTo(usd.spent, 0.15, 1e-9)
      assert.closeTo(usd.remaining, 1.85, 1e-9)
    }))

  it.effect("declines with the grant's reason before anything is signed; nothing is reserved", () =>
    Effect.gen(function*() {
      const payee = world.merchant
      const p = yield* ownerAndAgent(world.facilitator.address, { budget: 1, perAction: 0.5, recipients: [payee] })
      const offer = (o: { amount?: bigint; payTo?: Address; asset?: Address; facilitator?: Address } = {}) => ({
        scheme: "exact",
        network: "eip155:31337",
        asset: o.asset ?? usdc,
        amount: (o.amount ?? USD(0.1)).toString(),
        payTo: o.payTo ?? payee,
        maxTimeoutSeconds: 60,
        extra: { assetTransferMethod: "erc7710", facilitatorAddress: o.facilitator ?? world.facilitator.address }
      })
      const ask = (requirement: ReturnType<typeof offer>) =>
        failure(p.agentSession.api.payments.authorize({ payload: { delegationId: p.grantId, requirement, resource: { url: "https://api.example/x" } } }))
      const net = yield* Network
      const other = "0x00000000000000000000000000000000000000b0" as Address

      assert.strictEqual((yield* ask(offer({ amount: USD(0.6) }))).reason, "per_action_exceeded")
      assert.strictEqual((yield* ask(offer({ payTo: other }))).reason, "recipient_not_allowed")
      assert.strictEqual((yield* ask(offer({ asset: net.tokens.usdt.address }))).reason, "token_not_allowed")
      assert.strictEqual((yield* ask(offer({ facilitator: other }))).reason, "redeemer_not_allowed")
      // Each decline is on the owner's log.
      const log = yield* p.owner.api.activity.list({ query: { limit: 50, delegationId: p.grantId } })
      assert.sameMembers(
        log.items.filter((e) => e.action === "x402_payment" && e.status === "declined").map((e) => e.declineReason),
        ["per_action_exceeded", "recipient_not_allowed", "token_not_allowed", "redeemer_not_allowed"]
      )

      // Hostile offers, sent as raw JSON (the typed client would refuse some before sending): a 400 naming the field.
      const raw = (requirement: Record<string, unknown>, resource: Record<string, unknown> = { url: "https://api.example/x" }) =>
        Effect.promise(async () => {
          const res = await fetch(`${p.baseUrl}/payments/x402`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${p.token}` },
            body: JSON.stringify({ delegationId: p.grantId, requirement, resource })
          })
          return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } }
        })
      const cases: ReadonlyArray<[string, Record<string, unknown>, string]> = [
        ["wrong network", { network: "eip155:1" }, "body.requirement.network"],
        ["not CAIP-2", { network: "mainnet" }, "body.requirement.network"],
        ["unknown asset", { asset: other }, "body.requirement.asset"],
        ["amount 0", { amount: "0" }, "body.requirement.amount"],
        ["amount 2^256", { amount: (1n << 256n).toString() }, "body.requirement.amount"],
        ["amount with a fraction", { amount: "1.5" }, "body.requirement.amount"],
        ["payTo of 19 bytes", { payTo: `0x${"ab".repeat(19)}` }, "body.requirement.payTo"],
        ["payTo of 21 bytes", { payTo: `0x${"ab".repeat(21)}` }, "body.requirement.payTo"],
        ["another scheme", { scheme: "exotic" }, "body.requirement.scheme"],
        ["another method", { extra: { assetTransferMethod: "eip3009", facilitatorAddress: world.facilitator.address } }, "body.requirement.extra"]
      ]
      for (const [name, patch, field] of cases) {
        const answer = yield* raw({ ...offer(), ...patch })
        assert.strictEqual(answer.status, 400, name)
        assert.include(answer.body.error.message, field, name)
      }
      for (const [name, url] of [["NUL", "https://api.example/a\u0000b"], ["10 kB", `https://api.example/${"a".repeat(10_000)}`]] as const) {
        const answer = yield* raw(offer(), { url })
        assert.strictEqual(answer.status, 400, name)
        assert.include(answer.body.error.message, "resource", name)
      }

      assert.deepStrictEqual(yield* heldFor(p.grantId), { payments: 0, reservations: 0 }, "nothing reserved")
      // The listed merchant at its price is payable under the same grant.
      const paid = yield* Effect.promise(() => p.pay(`${world.resource.url}/report`, { maxAmount: USD(1) }))
      assert.strictEqual(paid.status, 200)
    }))

  it.effect("two payments at once where the budget holds one: one reserved, the other declined", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address, { budget: 0.5, perAction: 0.4 })
      const requirement = {
        scheme: "exact",
        network: "eip155:31337",
        asset: usdc,
        amount: USD(0.3).toString(),
        payTo: world.merchant,
        maxTimeoutSeconds: 60,
        extra: { assetTransferMethod: "erc7710", facilitatorAddress: world.facilitator.address }
      }
      const one = p.agentSession.api.payments.authorize({ payload: { delegationId: p.grantId, requirement, resource: { url: "https://api.example/x" } } })
      const results = yield* Effect.all([Effect.result(one), Effect.result(one), Effect.result(one)], { concurrency: "unbounded" })
      const ok = results.filter((r) => r._tag === "Success")
      assert.lengthOf(ok, 1)
      for (const r of results) {
        if (r._tag === "Failure") assert.strictEqual((r.failure as unknown as { declineReason?: string }).declineReason, "cap_exceeded")
      }
      assert.deepStrictEqual(yield* heldFor(p.grantId), { payments: 1, reservations: 1 })
    }))

  it.effect("one signed payment settled three times at once and its answer dropped: moved once, recorded once", () =>
    Effect.gen(function*() {
      const p = yield* ownerAndAgent(world.facilitator.address)
      const owner = p.owner.account.address as Address
      const before = yield* Effect.promise(() => balanceOf(usdc, owner))
      const requirements = {
        scheme: "exact",
        network: "eip155:31337",
        asset: usdc,
        amount: USD(0.2).toString(),
        payTo: world.merchant,
        maxTimeoutSeconds: 60,
        extra: { assetTransferMethod: "erc7710", facilitatorAddress: world.facilitator.address }
      }
      const payload = yield* Effect.promise(() =>
        p.authorizer.authorize({
          requirement: { scheme: "exact", chainId: 31337, asset: usdc, payTo: world.merchant, amount: USD(0.2), maxTimeoutSeconds: 60, facilitator: world.facilitator.address },
          validBefore: 0,
          resource: { url: "https://api.example/dropped" }
        })
      )
      // Three settle requests at once straight to the facilitator; nobody reads the resource's answer.
      const settle = () =>
        fetch(`${world.facilitator.url}/settle`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            x402Version: 2,
            paymentPayload: { x402Version: 2, resource: { url: "https://api.example/dropped" }, accepted: requirements, payload },
            paymentRequirements: requirements
          })
        }).then((r) => r.json() as Promise<{ success: boolean; transaction: string }>)
      const answers = yield* Effect.promise(() => Promise.all([settle(), settle(), settle()]))
      const succeeded = answers.filter((a) => a.success)
      assert.lengthOf(succeeded, 1)
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before - USD(0.2))

      const payment = yield* waitFor("the payment settled", p.owner.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
        Effect.orDie,
        Effect.map((list) => list.find((x) => x.status === "settled"))
      ))
      assert.strictEqual(payment.txHash, lower(succeeded[0]!.transaction))
      assert.strictEqual(payment.resource?.url, "https://api.example/dropped")
      yield* Effect.sleep(Duration.seconds(1))
      assert.deepStrictEqual(yield* heldFor(p.grantId), { payments: 1, reservations: 1 })
      const log = yield* p.owner.api.activity.list({ query: { limit: 50, delegationId: p.grantId } })
      assert.lengthOf(log.items.filter((e) => e.action === "x402_payment"), 1)
    }))
})

