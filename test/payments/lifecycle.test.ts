/**
 * A grant's freeze and expiry through the payment path, and smart-account delegates paying
 * through the service, with the real @x402 resource server and facilitator on loopback:
 *
 * - frozen: the service declines the payment (`account_frozen`, before anything is signed);
 *   around it, a payment the service authorized before the freeze cannot settle, one the agent
 *   signs itself is refused, and the agent's own redemption of its grant reverts
 *   (`CannotUseADisabledDelegation`), nothing moves; after the unfreeze it pays again;
 * - expired: the service declines (`expired`); a payment authorized just before cannot settle
 *   and the agent's own redemption reverts (`TimestampEnforcer:expired-delegation`);
 * - a smart account as the delegate (its ERC-1271 vouches for its key's signature): it pays
 *   through the service end to end, the follower records it on the owner's log and its own; a
 *   payment signed by another key is refused by the chain.
 */
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { redeemArgs } from "../../src/delegations/Grant.ts"
import { checkRequirement, type Erc7710Payload, type PaymentAuthorizer, PaymentRefused, permissionContextOf, settlementOf, transferExecution } from "@das/x402-erc7710"
import { relay, signOp } from "../delegations/helpers.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { ownerAndAgent, type Parties } from "./support.ts"
import { chainNow, refusedOnChain, signPayment, type Watch } from "./x402/attacker.ts"
import { balanceOf, paymentOf, requirementOf, scope, setEth, startWorld, USD, usdc, type World } from "./x402/support.ts"

process.env.DO_NOT_TRACK = "1"

let world: World
beforeAll(async () => {
  world = await startWorld()
}, 60_000)
afterAll(async () => {
  await world?.close()
})

const lower = (s: string) => s.toLowerCase()

/** What a paying call threw (a `PaymentRefused` before anything was signed), or `undefined` if it answered. */
const refusalOf = (call: () => Promise<unknown>) =>
  Effect.promise(() => call().then(() => undefined, (e: unknown) => e))

/** The service's authorization of an `exact` payment of `amount` to the world's merchant: the payload the agent signed. */
const authorized = (authorizer: PaymentAuthorizer, amount: bigint) =>
  Effect.promise(async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount })
    const checked = checkRequirement(requirements, scope, amount)
    if (!checked.ok) throw new Error(checked.refused.message)
    const payload = await authorizer.authorize({ requirement: checked.value, validBefore: (await chainNow()) + 60, resource: { url: `${world.resource.url}/report` } })
    return { requirements, payload }
  })

/** The agent (the grant's delegate key) redeems its grant itself: a transfer to the merchant, straight to the DelegationManager. */
const ownRedemption = (p: Parties, amount: bigint, watch: Watch, expected: string) =>
  Effect.promise(async () => {
    const grant = redeemArgs(p.context.environment, p.context.grant, p.context.scope, { token: usdc, to: world.merchant })!
    await setEth(p.agent.address)
    await refusedOnChain(watch, p.agentKey, permissionContextOf([grant]), transferExecution(usdc, world.merchant, amount), expected)
  })

/** A payment the agent signs itself (around the service), sent by the facilitator's key straight to the chain: refused. */
const aroundRefused = (p: Parties, amount: bigint, watch: Watch, expected: string) =>
  Effect.promise(async () => {
    const terms = { scheme: "exact" as const, asset: usdc, payTo: world.merchant, amount, validBefore: (await chainNow()) + 60 }
    const payment: Erc7710Payload = await signPayment(p.context, p.agent, terms, world.facilitator.address)
    await refusedOnChain(watch, world.facilitatorKey, payment.permissionContext, transferExecution(usdc, world.merchant, amount), expected)
  })

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second" } }), { timeout: Duration.seconds(180), excludeTestServices: true })(
  "x402: freeze, expiry and smart-account delegates",
  (it) => {
    it.effect("frozen: the service declines, and around it the chain refuses every settlement and the delegate's own redemption; unfrozen it pays", () =>
      Effect.gen(function*() {
        const p = yield* ownerAndAgent(world.facilitator.address)
        const owner = p.owner.account.address as Address
        const watch: Watch = { tokens: [usdc], holders: [owner, world.merchant] }
        // Authorized (and signed by the agent) before the freeze, not yet settled.
        const early = yield* authorized(p.authorizer, USD(0.02))

        const freeze = yield* p.owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        assert.strictEqual((yield* relay(p.owner.api, yield* signOp(p.owner.key, freeze.userOp))).outcome, "mined")
        const before = yield* Effect.promise(() => balanceOf(usdc, owner))

        // Through the service: declined before anything is signed, with the reason; a 402 is never paid.
        const refused = yield* refusalOf(() => p.pay(`${world.resource.url}/report`, { maxAmount: USD(0.05) }))
        assert.instanceOf(refused, PaymentRefused)
        assert.strictEqual((refused as PaymentRefused).field, "grant")
        assert.match((refused as PaymentRefused).reason, /^account_frozen: The account is frozen/)
        const log = yield* p.owner.api.activity.list({ query: { limit: 50, delegationId: p.grantId } })
        assert.isTrue(log.items.some((e) => e.action === "x402_payment" && e.status === "declined" && e.declineReason === "account_frozen"))

        // Around the service: the payment signed before the freeze does not settle (the facilitator's simulation
        // says why), nor sent straight to the chain; neither does a fresh one, nor the delegate's own redemption.
        const settled = yield* Effect.promise(() => world.facilitator.facilitator.settle(paymentOf(early.requirements, early.payload), early.requirements))
        assert.isFalse(settled.success)
        assert.include(settled.errorMessage, "CannotUseADisabledDelegation")
        yield* Effect.promise(() =>
          refusedOnChain(watch, world.facilitatorKey, early.payload.permissionContext, transferExecution(usdc, world.merchant, USD(0.02)), "CannotUseADisabledDelegation")
        )
        yield* aroundRefused(p, USD(0.02), watch, "CannotUseADisabledDelegation")
        yield* ownRedemption(p, USD(0.02), watch, "CannotUseADisabledDelegation")
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before, "nothing moved")

        // Unfrozen (a freeze, not a revoke): it pays again through the service.
        const unfreeze = yield* p.owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
        assert.strictEqual((yield* relay(p.owner.api, yield* signOp(p.owner.key, unfreeze.userOp))).outcome, "mined")
        const res = yield* Effect.promise(() => p.pay(`${world.resource.url}/report`, { maxAmount: USD(0.05) }))
        assert.strictEqual(res.status, 200)
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before - USD(0.01))
      }))

    it.effect("expired: the service declines, a payment authorized just before cannot settle, the delegate's own redemption reverts", () =>
      Effect.gen(function*() {
        // Whole seconds: the chain's TimestampEnforcer and the service's policy read the same instant.
        const expiresAt = new Date((Math.ceil(Date.now() / 1000) + 12) * 1000)
        const p = yield* ownerAndAgent(world.facilitator.address, { expiresAt: expiresAt.toISOString() })
        const owner = p.owner.account.address as Address
        const watch: Watch = { tokens: [usdc], holders: [owner, world.merchant] }
        const early = yield* authorized(p.authorizer, USD(0.02))
        // The payment is never redeemable past its grant: its deadline is the grant's expiry, not the offer's 60 s.
        const row = (yield* p.owner.api.payments.list({ query: { delegationId: p.grantId } }))[0]!
        assert.strictEqual(new Date(row.validBefore).getTime(), expiresAt.getTime())

        while ((yield* Effect.promise(chainNow)) * 1000 <= expiresAt.getTime() || Date.now() <= expiresAt.getTime()) {
          yield* Effect.sleep(Duration.millis(500))
        }
        const before = yield* Effect.promise(() => balanceOf(usdc, owner))
        const refused = yield* refusalOf(() => p.pay(`${world.resource.url}/report`, { maxAmount: USD(0.05) }))
        assert.instanceOf(refused, PaymentRefused)
        assert.match((refused as PaymentRefused).reason, /^expired: This delegation expired at /)

        const settled = yield* Effect.promise(() => world.facilitator.facilitator.settle(paymentOf(early.requirements, early.payload), early.requirements))
        assert.isFalse(settled.success)
        yield* Effect.promise(() =>
          refusedOnChain(watch, world.facilitatorKey, early.payload.permissionContext, transferExecution(usdc, world.merchant, USD(0.02)), "TimestampEnforcer:expired-delegation")
        )
        yield* ownRedemption(p, USD(0.02), watch, "TimestampEnforcer:expired-delegation")
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before, "nothing moved")
        // The unsettled payment held its reservation only until its deadline: nothing is spent or held.
        const grant = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
        assert.strictEqual(grant.status, "expired")
        assert.strictEqual(grant.spentToDate.find((s) => s.token.symbol === "USDC")!.spent, 0)
        assert.strictEqual((yield* p.owner.api.payments.list({ query: { delegationId: p.grantId } }))[0]!.status, "expired")
      }))

    it.effect("a smart account as the delegate pays through the service; the follower records it on both logs; another key's signature is refused on chain", () =>
      Effect.gen(function*() {
        const p = yield* ownerAndAgent(world.facilitator.address, {}, { delegate: "account" })
        assert.notStrictEqual(lower(p.delegate), lower(p.agent.address), "the delegate is the agent's smart account")
        assert.strictEqual(lower(p.delegate), lower(p.agentSession.account.address))
        const owner = p.owner.account.address as Address
        const before = { owner: yield* Effect.promise(() => balanceOf(usdc, owner)), merchant: yield* Effect.promise(() => balanceOf(usdc, world.merchant)) }

        const res = yield* Effect.promise(() => p.pay(`${world.resource.url}/report`, { maxAmount: USD(0.05) }))
        assert.strictEqual(res.status, 200)
        const settled = settlementOf(res)!
        assert.isTrue(settled.success)
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), before.owner - USD(0.01))
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, world.merchant)), before.merchant + USD(0.01))

        const payment = yield* waitFor("the payment settled", p.agentSession.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
          Effect.orDie,
          Effect.map((list) => list.find((x) => x.status === "settled"))
        ))
        assert.strictEqual(payment.txHash, lower(settled.transaction))
        assert.strictEqual(payment.settledUnits, USD(0.01).toString())
        const ownerEntry = yield* p.owner.api.activity.get({ params: { eventId: payment.auditEventId! } })
        assert.deepStrictEqual([ownerEntry.action, ownerEntry.status, ownerEntry.amount], ["x402_payment", "executed", 0.01])
        // The smart-account agent sees the payment on its own log.
        const agentLog = yield* waitFor("the agent's entry", p.agentSession.api.activity.list({ query: { limit: 50 } }).pipe(
          Effect.orDie,
          Effect.map((page) => page.items.find((e) => e.action === "x402_payment" && e.txHash === lower(settled.transaction)))
        ))
        assert.strictEqual(agentLog.amount, 0.01)
        const grant = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
        assert.strictEqual(grant.spentToDate.find((s) => s.token.symbol === "USDC")!.spent, 0.01)

        // A key that is not the smart account's owner signs a payment from it: its ERC-1271 refuses, the chain reverts.
        const stranger = privateKeyToAccount(generatePrivateKey() as Hex)
        const watch: Watch = { tokens: [usdc], holders: [owner, world.merchant] }
        const forged = yield* Effect.promise(async () =>
          signPayment(p.context, stranger, { scheme: "exact", asset: usdc, payTo: world.merchant, amount: USD(0.01), validBefore: (await chainNow()) + 60 }, world.facilitator.address)
        )
        yield* Effect.promise(() =>
          refusedOnChain(watch, world.facilitatorKey, forged.permissionContext, transferExecution(usdc, world.merchant, USD(0.01)), "InvalidERC1271Signature")
        )
      }))
  }
)
