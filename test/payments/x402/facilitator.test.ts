/**
 * The facilitator's verify and settle (packages/x402-erc7710/src/Facilitator.ts) against payments
 * an attacker crafts: each refused with its reason before any transaction is sent; the same
 * payment settled twice at once moves money once; `upto` settles at most the ceiling signed
 * and a zero settlement sends nothing. And its HTTP interface (GET /supported, POST /verify,
 * POST /settle) answers malformed requests with a 400 naming the field.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { createCaveatBuilder, encodeDelegations, decodeDelegations } from "@metamask/smart-accounts-kit/utils"
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type Erc7710Payload, makeFacilitator, transferExecution } from "@das/x402-erc7710"
import { chainNow, signPayment } from "./attacker.ts"
import { balanceOf, makeOwner, net, paymentOf, randomAddress, requirementOf, signGrant, smartAccount, startWorld, USD, usdc, type World } from "./support.ts"

let world: World
let owner: Awaited<ReturnType<typeof makeOwner>>
const agent = privateKeyToAccount(generatePrivateKey())
let grant: Awaited<ReturnType<typeof signGrant>>
beforeAll(async () => {
  world = await startWorld()
  owner = await makeOwner()
  grant = await signGrant(owner, agent.address)
})
afterAll(async () => {
  await world?.close()
})

const exactTerms = async (amount = USD(1), validFor = 60) =>
  ({ scheme: "exact" as const, asset: usdc, payTo: world.merchant, amount, validBefore: (await chainNow()) + validFor })

const verify = (payment: PaymentPayload, requirements: PaymentRequirements) => world.facilitator.facilitator.verify(payment, requirements)

const refused = async (payment: PaymentPayload, requirements: PaymentRequirements, reason: string, message?: string) => {
  const result = await verify(payment, requirements)
  assert.isFalse(result.isValid, `${reason} expected`)
  assert.strictEqual(result.invalidReason, reason, result.invalidMessage)
  if (message !== undefined) assert.include(result.invalidMessage, message)
  const settled = await world.facilitator.facilitator.settle(payment, requirements)
  assert.isFalse(settled.success)
  assert.strictEqual(settled.errorReason, reason)
  assert.strictEqual(settled.transaction, "", "no transaction was sent")
}

describe("facilitator verify", () => {
  it("accepts the payment the client signs, and says who pays", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const payment = paymentOf(requirements, await signPayment(grant, agent, await exactTerms(), world.facilitator.address))
    const result = await verify(payment, requirements)
    assert.isTrue(result.isValid, result.invalidMessage)
    assert.strictEqual(result.payer, owner.address)
  })

  it("refuses a payment made for other requirements, or allowing another transfer than the one required", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const signed = await signPayment(grant, agent, await exactTerms(), world.facilitator.address)
    // The client's `accepted` differs from what the resource server asks the facilitator.
    const other = requirementOf(world, { scheme: "exact", amount: USD(2) })
    await refused(paymentOf(other, signed), requirements, "invalid_erc7710_accepted_mismatch")
    // Both say 2 USDC, or another recipient, but the delegation allows 1 USDC to the merchant.
    await refused(paymentOf(other, signed), other, "invalid_erc7710_terms", "allows 1000000")
    const elsewhere = requirementOf(world, { scheme: "exact", amount: USD(1), payTo: randomAddress() })
    await refused(paymentOf(elsewhere, signed), elsewhere, "invalid_erc7710_terms")
  })

  it("refuses another DelegationManager, another delegate, another payer, and a context that is not a chain", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const signed = await signPayment(grant, agent, await exactTerms(), world.facilitator.address)
    const as = (payload: Record<string, unknown>) => paymentOf(requirements, payload as unknown as Erc7710Payload)
    await refused(as({ ...signed, delegationManager: randomAddress() }), requirements, "invalid_erc7710_delegation_manager")
    await refused(as({ ...signed, delegator: randomAddress() }), requirements, "invalid_erc7710_delegator")
    await refused(as({ ...signed, permissionContext: "0x1234" }), requirements, "invalid_payload")
    await refused(as({ delegationManager: signed.delegationManager, permissionContext: signed.permissionContext }), requirements, "invalid_payload")
    const forAnother = await signPayment(grant, agent, await exactTerms(), randomAddress())
    await refused(paymentOf(requirements, forAnother), requirements, "invalid_erc7710_delegate")
    // The leaf alone (the grant dropped from the chain): not a root delegation.
    const [leaf] = decodeDelegations(signed.permissionContext)
    await refused(as({ ...signed, permissionContext: encodeDelegations([leaf!]) }), requirements, "invalid_erc7710_delegation_chain")
  })

  it("refuses a payment that is not bounded as one: reusable, unpinned, or valid for too long; or already past", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const terms = await exactTerms()
    const builder = () => createCaveatBuilder(net.delegation as never)
    const execution = transferExecution(usdc, world.merchant, USD(1))
    const reusable = builder().addCaveat("exactExecution", { execution }).addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: terms.validBefore }).build()
    await refused(paymentOf(requirements, await signPayment(grant, agent, terms, world.facilitator.address, reusable)), requirements, "invalid_erc7710_terms", "not single-use")
    const unpinned = builder().addCaveat("erc20TransferAmount", { tokenAddress: usdc, maxAmount: USD(5) }).addCaveat("limitedCalls", { limit: 1 })
      .addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: terms.validBefore }).build()
    await refused(paymentOf(requirements, await signPayment(grant, agent, terms, world.facilitator.address, unpinned)), requirements, "invalid_erc7710_terms", "does not pin its execution")
    const timeless = builder().addCaveat("exactExecution", { execution }).addCaveat("limitedCalls", { limit: 1 }).build()
    await refused(paymentOf(requirements, await signPayment(grant, agent, terms, world.facilitator.address, timeless)), requirements, "invalid_erc7710_terms", "no deadline")
    const longLived = await signPayment(grant, agent, await exactTerms(USD(1), 3_600), world.facilitator.address)
    await refused(paymentOf(requirements, longLived), requirements, "invalid_erc7710_deadline", "longer than maxTimeoutSeconds")
    const past = await signPayment(grant, agent, await exactTerms(USD(1), -1), world.facilitator.address)
    await refused(paymentOf(requirements, past), requirements, "invalid_erc7710_deadline")
  })

  it("refuses a payer without the funds, and a payment the chain would not execute (a forged signature)", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const broke = await smartAccount()
    const brokeGrant = await signGrant(broke, agent.address)
    await refused(paymentOf(requirements, await signPayment(brokeGrant, agent, await exactTerms(), world.facilitator.address)), requirements, "insufficient_funds")
    const impostor = privateKeyToAccount(generatePrivateKey())
    const forged = await signPayment({ ...grant }, impostor, await exactTerms(), world.facilitator.address)
    await refused(paymentOf(requirements, forged), requirements, "invalid_erc7710_simulation_failed")
  })
})

describe("facilitator settle", () => {
  it("the same payment settled twice at once moves the money once", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const payment = paymentOf(requirements, await signPayment(grant, agent, await exactTerms(), world.facilitator.address))
    const before = await balanceOf(usdc, world.merchant)
    const results = await Promise.all([1, 2, 3].map(() => world.facilitator.facilitator.settle(payment, requirements)))
    assert.strictEqual(results.filter((r) => r.success).length, 1, JSON.stringify(results))
    assert.strictEqual(await balanceOf(usdc, world.merchant), before + USD(1))
    const after = await world.facilitator.facilitator.settle(payment, requirements)
    assert.isFalse(after.success)
    assert.include(after.errorMessage, "LimitedCallsEnforcer:limit-exceeded")
  })

  it("five different payments settled at once all land (one settlement key, its nonces in order)", async () => {
    const payers = await Promise.all([1, 2, 3, 4, 5].map(() => makeOwner(5)))
    const payments = await Promise.all(payers.map(async (payer) => {
      const g = await signGrant(payer, agent.address)
      const requirements = requirementOf(world, { scheme: "exact", amount: USD(0.2) })
      return { requirements, payment: paymentOf(requirements, await signPayment(g, agent, await exactTerms(USD(0.2)), world.facilitator.address)) }
    }))
    const before = await balanceOf(usdc, world.merchant)
    const results = await Promise.all(payments.map(({ payment, requirements }) => world.facilitator.facilitator.settle(payment, requirements)))
    assert.deepStrictEqual(results.map((r) => r.success), [true, true, true, true, true], JSON.stringify(results.filter((r) => !r.success)))
    assert.strictEqual(new Set(results.map((r) => r.transaction)).size, 5)
    assert.strictEqual(await balanceOf(usdc, world.merchant), before + USD(1))
    assert.deepStrictEqual(await Promise.all(payers.map((p) => balanceOf(usdc, p.address))), payers.map(() => USD(4.8)))
  })

  it("upto: never more than the ceiling signed; zero settles nothing and sends no transaction", async () => {
    const ceiling = requirementOf(world, { scheme: "upto", amount: USD(1) })
    const terms = { ...(await exactTerms()), scheme: "upto" as const }
    const payment = paymentOf(ceiling, await signPayment(grant, agent, terms, world.facilitator.address))
    assert.isTrue((await verify(payment, ceiling)).isValid)
    const before = await balanceOf(usdc, world.merchant)
    const over = await world.facilitator.facilitator.settle(payment, { ...ceiling, amount: (USD(1) + 1n).toString() })
    assert.isFalse(over.success)
    assert.strictEqual(over.errorReason, "invalid_upto_evm_payload_settlement_exceeds_amount")
    const zero = await world.facilitator.facilitator.settle(payment, { ...ceiling, amount: "0" })
    assert.deepStrictEqual({ success: zero.success, transaction: zero.transaction, amount: zero.amount }, { success: true, transaction: "", amount: "0" })
    assert.strictEqual(await balanceOf(usdc, world.merchant), before)
    const part = await world.facilitator.facilitator.settle(payment, { ...ceiling, amount: USD(0.3).toString() })
    assert.isTrue(part.success, part.errorMessage)
    assert.strictEqual(part.amount, USD(0.3).toString())
    assert.strictEqual(await balanceOf(usdc, world.merchant), before + USD(0.3))
  })
})

describe("facilitator without its chain", () => {
  it("an RPC that does not answer is a refusal with its reason, never a throw, and nothing is sent", async () => {
    const down = makeFacilitator({ network: { ...net, rpcUrl: "http://127.0.0.1:9" }, key: generatePrivateKey() })
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const payment = paymentOf(requirements, await signPayment(grant, agent, await exactTerms(), down.address))
    const verified = await down.facilitator.verify(payment, requirements)
    assert.deepStrictEqual([verified.isValid, verified.invalidReason], [false, "unexpected_verify_error"])
    const settled = await down.facilitator.settle(payment, requirements)
    assert.deepStrictEqual([settled.success, settled.errorReason, settled.transaction], [false, "unexpected_settle_error", ""])
  })
})

describe("facilitator HTTP interface", () => {
  const post = (path: string, body: string) =>
    fetch(`${world.facilitator.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body })

  it("GET /supported lists exact and upto on this chain with the settlement address", async () => {
    const supported = await (await fetch(`${world.facilitator.url}/supported`)).json() as {
      kinds: Array<{ scheme: string; network: string; extra: Record<string, unknown> }>
      signers: Record<string, Array<string>>
    }
    assert.deepStrictEqual(supported.kinds.map((k) => `${k.scheme} ${k.network}`).sort(), [`exact eip155:${net.chainId}`, `upto eip155:${net.chainId}`])
    for (const kind of supported.kinds) {
      assert.deepStrictEqual(kind.extra, { facilitatorAddress: world.facilitator.address, delegationManager: net.delegation.DelegationManager })
    }
    assert.deepStrictEqual(supported.signers["eip155:*"], [world.facilitator.address])
  })

  it("POST /verify answers a valid payment, and a 400 naming the field to malformed input", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(1) })
    const payment = paymentOf(requirements, await signPayment(grant, agent, await exactTerms(), world.facilitator.address))
    const ok = await post("/verify", JSON.stringify({ x402Version: 2, paymentPayload: payment, paymentRequirements: requirements }))
    assert.strictEqual(ok.status, 200)
    assert.deepStrictEqual(await ok.json(), { isValid: true, payer: owner.address })

    const cases: Array<[string, string]> = [
      ["{not json", "entity.parse.failed"],
      [JSON.stringify({ x402Version: 2, paymentRequirements: requirements }), "paymentPayload"],
      [JSON.stringify({ paymentPayload: payment, paymentRequirements: requirements }), "x402Version"],
      [JSON.stringify({ x402Version: 2, paymentPayload: payment, paymentRequirements: "exact" }), "paymentRequirements"],
      [JSON.stringify({ x402Version: 2, paymentPayload: payment, paymentRequirements: { ...requirements, network: "eip155:1" } }), "No facilitator registered"]
    ]
    for (const [body, says] of cases) {
      const res = await post("/verify", body)
      assert.strictEqual(res.status, 400, body.slice(0, 60))
      assert.include(JSON.stringify(await res.json()), says)
    }
    const huge = await post("/settle", JSON.stringify({ x402Version: 2, paymentPayload: { ...payment, pad: "0".repeat(100_000) }, paymentRequirements: requirements }))
    assert.strictEqual(huge.status, 413)
  })

  it("POST /settle through HTTP settles once and returns the transaction", async () => {
    const requirements = requirementOf(world, { scheme: "exact", amount: USD(0.5) })
    const payment = paymentOf(requirements, await signPayment(grant, agent, await exactTerms(USD(0.5)), world.facilitator.address))
    const res = await post("/settle", JSON.stringify({ x402Version: 2, paymentPayload: payment, paymentRequirements: requirements }))
    assert.strictEqual(res.status, 200)
    const body = await res.json() as { success: boolean; transaction: Hex; payer: string; amount: string }
    assert.isTrue(body.success)
    assert.strictEqual(body.payer, owner.address)
    assert.strictEqual(body.amount, USD(0.5).toString())
    assert.match(body.transaction, /^0x[0-9a-f]{64}$/)
  })
})
