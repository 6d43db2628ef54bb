/**
 * The chain is the guard of an x402 payment. The attacker holds a signed payment (and, worst
 * case, the facilitator's key, which the payment names as its delegate) and sends its own
 * `redeemDelegations` straight to the chain: more, to another address, in another token,
 * with native value, twice, after the deadline, or from a key the payment does not name.
 * Each is mined as a reverted transaction with the enforcer's reason, and no balance moves.
 * Then the grant's own limits (per-action cap, budget, count, recipient allowlist, expiry,
 * revoke, redeemer rule) bind a payment exactly as they bind a transfer: refused by the
 * facilitator's verify (its simulation runs every caveat) and by the chain when sent anyway.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { decodePaymentRequiredHeader } from "@x402/core/http"
import type { Address } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { localGrantAuthorizer } from "../../../src/payments/x402/Authorizer.ts"
import { payingFetch, permissionContextOf, settlementOf, transferExecution } from "@das/x402-erc7710"
import { redeemArgs } from "../../../src/delegations/Grant.ts"
import { acceptedOnChain, chainNow, refusedOnChain, signPayment, type Watch } from "./attacker.ts"
import {
  balanceOf,
  fundedKey,
  makeOwner,
  net,
  paymentOf,
  randomAddress,
  requirementOf,
  revokeGrant,
  scope,
  setEth,
  signGrant,
  startWorld,
  USD,
  usdc,
  usdt,
  type World
} from "./support.ts"

let world: World
beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world?.close()
})

const newAgent = () => privateKeyToAccount(generatePrivateKey())

describe("a payment's own caveats hold on chain", () => {
  it("exact: more, to another address, in another token, with value, or by a key it does not name: each reverts, nothing moves; then it settles once", async () => {
    const owner = await makeOwner()
    const agent = newAgent()
    const grant = await signGrant(owner, agent.address)
    const attacker = world.facilitatorKey
    const attackerAddress = privateKeyToAccount(attacker).address
    const watch: Watch = { tokens: [usdc, usdt], holders: [owner.address, world.merchant, attackerAddress] }
    const terms = { scheme: "exact" as const, asset: usdc, payTo: world.merchant, amount: USD(1), validBefore: (await chainNow()) + 60 }
    const payment = await signPayment(grant, agent, terms, world.facilitator.address)
    const ctx = payment.permissionContext

    await refusedOnChain(watch, attacker, ctx, transferExecution(usdc, world.merchant, USD(1) + 1n), "ExactExecutionEnforcer:invalid-execution")
    await refusedOnChain(watch, attacker, ctx, transferExecution(usdc, attackerAddress, USD(1)), "ExactExecutionEnforcer:invalid-execution")
    await refusedOnChain(watch, attacker, ctx, transferExecution(usdt, world.merchant, USD(1)), "ExactExecutionEnforcer:invalid-execution")
    await refusedOnChain(watch, attacker, ctx, { ...transferExecution(usdc, world.merchant, USD(1)), value: 1n }, "ExactExecutionEnforcer:invalid-execution")
    // Anyone else holding the payment (it names the facilitator as its delegate).
    await refusedOnChain(watch, await fundedKey(), ctx, transferExecution(usdc, world.merchant, USD(1)), "InvalidDelegate")

    // The payment itself, through the facilitator: once.
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const before = await balanceOf(usdc, world.merchant)
    const settled = await world.facilitator.facilitator.settle(paymentOf(requirements, payment), requirements)
    assert.isTrue(settled.success, settled.errorMessage)
    assert.strictEqual(await balanceOf(usdc, world.merchant), before + USD(1))
    await refusedOnChain(watch, attacker, ctx, transferExecution(usdc, world.merchant, USD(1)), "LimitedCallsEnforcer:limit-exceeded")
    const twice = await world.facilitator.facilitator.settle(paymentOf(requirements, payment), requirements)
    assert.isFalse(twice.success)
    assert.include(twice.errorMessage, "LimitedCallsEnforcer:limit-exceeded")
    assert.strictEqual(await balanceOf(usdc, world.merchant), before + USD(1))
  })

  it("upto: over the ceiling, to another address, in another token, with value: each reverts; a part settles once, the rest never", async () => {
    const owner = await makeOwner()
    const agent = newAgent()
    const grant = await signGrant(owner, agent.address)
    const attacker = world.facilitatorKey
    const attackerAddress = privateKeyToAccount(attacker).address
    const watch: Watch = { tokens: [usdc, usdt], holders: [owner.address, world.merchant, attackerAddress] }
    const terms = { scheme: "upto" as const, asset: usdc, payTo: world.merchant, amount: USD(1), validBefore: (await chainNow()) + 60 }
    const ctx = (await signPayment(grant, agent, terms, world.facilitator.address)).permissionContext

    await refusedOnChain(watch, attacker, ctx, transferExecution(usdc, world.merchant, USD(1) + 1n), "ERC20TransferAmountEnforcer:allowance-exceeded")
    await refusedOnChain(watch, attacker, ctx, transferExecution(usdc, attackerAddress, USD(0.5)), "AllowedCalldataEnforcer:invalid-calldata")
    await refusedOnChain(watch, attacker, ctx, transferExecution(usdt, world.merchant, USD(0.5)), "ERC20TransferAmountEnforcer:invalid-contract")
    await refusedOnChain(watch, attacker, ctx, { ...transferExecution(usdc, world.merchant, USD(0.5)), value: 1n }, "ValueLteEnforcer:value-too-high")

    const before = await balanceOf(usdc, world.merchant)
    await acceptedOnChain(attacker, ctx, transferExecution(usdc, world.merchant, USD(0.4)))
    await refusedOnChain(watch, attacker, ctx, transferExecution(usdc, world.merchant, USD(0.4)), "LimitedCallsEnforcer:limit-exceeded")
    assert.strictEqual(await balanceOf(usdc, world.merchant), before + USD(0.4))
  })

  it("after its deadline a payment is dead, and so is every payment under an expired grant", async () => {
    const owner = await makeOwner()
    const agent = newAgent()
    const now = await chainNow()
    const grant = await signGrant(owner, agent.address)
    const shortGrant = await signGrant(owner, agent.address, { expiresAtSeconds: now + 5 })
    const watch: Watch = { tokens: [usdc], holders: [owner.address, world.merchant] }
    const exact = { scheme: "exact" as const, asset: usdc, payTo: world.merchant, amount: USD(1) }
    const late = await signPayment(grant, agent, { ...exact, validBefore: now + 4 }, world.facilitator.address)
    const underExpired = await signPayment(shortGrant, agent, { ...exact, validBefore: now + 60 }, world.facilitator.address)
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    // Both verify before the deadlines pass.
    assert.isTrue((await world.facilitator.facilitator.verify(paymentOf(requirements, underExpired), requirements)).isValid)

    while ((await chainNow()) < now + 6) await new Promise((r) => setTimeout(r, 500))
    const verified = await world.facilitator.facilitator.verify(paymentOf(requirements, late), requirements)
    assert.isFalse(verified.isValid)
    assert.strictEqual(verified.invalidReason, "invalid_erc7710_deadline")
    await refusedOnChain(watch, world.facilitatorKey, late.permissionContext, transferExecution(usdc, world.merchant, USD(1)), "TimestampEnforcer:expired-delegation")
    const expiredGrant = await world.facilitator.facilitator.settle(paymentOf(requirements, underExpired), requirements)
    assert.isFalse(expiredGrant.success)
    assert.include(expiredGrant.errorMessage, "TimestampEnforcer:expired-delegation")
    await refusedOnChain(watch, world.facilitatorKey, underExpired.permissionContext, transferExecution(usdc, world.merchant, USD(1)), "TimestampEnforcer:expired-delegation")
  })
})

describe("the grant's own limits bind a payment", () => {
  /** Verify refuses with `expected` in its simulation's reason, and the redemption sent anyway reverts. */
  const refusedEverywhere = async (
    grantContext: Awaited<ReturnType<typeof signGrant>>,
    agent: ReturnType<typeof newAgent>,
    input: { payTo?: Address; amount: bigint },
    watch: Watch,
    expected: string
  ) => {
    const payTo = input.payTo ?? world.merchant
    const terms = { scheme: "exact" as const, asset: usdc, payTo, amount: input.amount, validBefore: (await chainNow()) + 60 }
    const payment = await signPayment(grantContext, agent, terms, world.facilitator.address)
    const requirements = requirementOf(world, { scheme: "exact", amount: input.amount, payTo })
    const verified = await world.facilitator.facilitator.verify(paymentOf(requirements, payment), requirements)
    assert.isFalse(verified.isValid, expected)
    assert.strictEqual(verified.invalidReason, "invalid_erc7710_simulation_failed")
    assert.include(verified.invalidMessage, expected)
    await refusedOnChain(watch, world.facilitatorKey, payment.permissionContext, transferExecution(usdc, payTo, input.amount), expected)
  }

  /** A payment that settles through the facilitator. */
  const settles = async (grantContext: Awaited<ReturnType<typeof signGrant>>, agent: ReturnType<typeof newAgent>, amount: bigint) => {
    const terms = { scheme: "exact" as const, asset: usdc, payTo: world.merchant, amount, validBefore: (await chainNow()) + 60 }
    const payment = await signPayment(grantContext, agent, terms, world.facilitator.address)
    const requirements = requirementOf(world, { scheme: "exact", amount })
    const settled = await world.facilitator.facilitator.settle(paymentOf(requirements, payment), requirements)
    assert.isTrue(settled.success, settled.errorMessage)
  }

  it("the per-action cap, the budget, the action count and the recipient allowlist", async () => {
    const owner = await makeOwner()
    const agent = newAgent()
    const watch: Watch = { tokens: [usdc], holders: [owner.address, world.merchant] }

    const capped = await signGrant(owner, agent.address, { perAction: 5, budget: 50 })
    await refusedEverywhere(capped, agent, { amount: USD(5) + 1n }, watch, "TransferCapEnforcer:amount-exceeded")

    const budget = await signGrant(owner, agent.address, { perAction: 5, budget: 5 })
    await settles(budget, agent, USD(3))
    await refusedEverywhere(budget, agent, { amount: USD(3) }, watch, "MultiTokenPeriodEnforcer:transfer-amount-exceeded")

    const counted = await signGrant(owner, agent.address, { maxActions: 1 })
    await settles(counted, agent, USD(1))
    await refusedEverywhere(counted, agent, { amount: USD(1) }, watch, "LimitedCallsEnforcer:limit-exceeded")

    const alice = randomAddress()
    const listed = await signGrant(owner, agent.address, { recipients: [alice] })
    await refusedEverywhere(listed, agent, { amount: USD(1) }, watch, "AllowedCalldataEnforcer:invalid-calldata")
  })

  it("a revoked grant pays nothing", async () => {
    const owner = await makeOwner()
    const agent = newAgent()
    const watch: Watch = { tokens: [usdc], holders: [owner.address, world.merchant] }
    const grant = await signGrant(owner, agent.address)
    await settles(grant, agent, USD(1))
    await revokeGrant(owner, grant.grant)
    await refusedEverywhere(grant, agent, { amount: USD(1) }, watch, "CannotUseADisabledDelegation")
  })

  it("the grant's redeemer rule: a facilitator it does not name cannot settle; one it names can, end to end", async () => {
    const owner = await makeOwner()
    const agent = newAgent()
    const watch: Watch = { tokens: [usdc], holders: [owner.address, world.merchant] }
    const agentOnly = await signGrant(owner, agent.address, { redeemers: [agent.address] })
    await refusedEverywhere(agentOnly, agent, { amount: USD(0.01) }, watch, "RedeemerEnforcer:unauthorized-redeemer")
    // Through the world, the agent's paid retry is answered 402 again with the facilitator's reason; nothing moves.
    const before = await balanceOf(usdc, owner.address)
    const refusedPay = await payingFetch({ scope, authorizer: localGrantAuthorizer(agentOnly, agent) })(`${world.resource.url}/report`, { maxAmount: USD(0.01) })
    assert.strictEqual(refusedPay.status, 402)
    const again = decodePaymentRequiredHeader(refusedPay.headers.get("PAYMENT-REQUIRED")!)
    assert.include(again.error, "invalid_erc7710_simulation_failed")
    assert.strictEqual(await balanceOf(usdc, owner.address), before)
    // The agent's own redemptions stay allowed under that rule (a transfer it makes itself).
    const agentKey = generatePrivateKey()
    const selfAgent = privateKeyToAccount(agentKey)
    const selfGrant = await signGrant(owner, selfAgent.address, { redeemers: [selfAgent.address] })
    await setEth(selfAgent.address)
    const own = redeemArgs(net.delegation, selfGrant.grant, selfGrant.scope, { token: usdc, to: world.merchant })!
    await acceptedOnChain(agentKey, permissionContextOf([own]), transferExecution(usdc, world.merchant, USD(0.01)))

    // Naming the facilitator too: the agent pays a 402 through the whole world.
    const withFacilitator = await signGrant(owner, agent.address, { redeemers: [agent.address, world.facilitator.address] })
    const pay = payingFetch({ scope, authorizer: localGrantAuthorizer(withFacilitator, agent) })
    const res = await pay(`${world.resource.url}/report`, { maxAmount: USD(0.01) })
    assert.strictEqual(res.status, 200)
    assert.isTrue(settlementOf(res)?.success)
  })
})
