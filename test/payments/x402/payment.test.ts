/**
 * End to end on the run's local chain: an agent holding a grant fetches a paid resource
 * from a resource server built on @x402/express, through our fetch wrapper (@x402/fetch +
 * the ERC-7710 client scheme), settled by our facilitator service (@x402/core's facilitator
 * + the ERC-7710 mechanism). It gets 402, pays, gets 200 and the content; the transaction in
 * PAYMENT-RESPONSE is the facilitator's redemption and the balances read on chain match.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { DelegationManager } from "@metamask/delegation-abis"
import { ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from "@x402/core/http"
import type { PaymentPayload } from "@x402/core/types"
import { decodeEventLog } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { localGrantAuthorizer } from "../../../src/payments/x402/Authorizer.ts"
import { payingFetch, settlementOf, transferredIn } from "@das/x402-erc7710"
import { balanceOf, makeOwner, net, publicClient, scope, signGrant, smartAccount, startWorld, USD, usdc, type World } from "./support.ts"

let world: World
beforeAll(async () => {
  world = await startWorld()
})
afterAll(async () => {
  await world?.close()
})

/** A fetch that records the PAYMENT-SIGNATURE headers it sends. */
const recording = () => {
  const sent: Array<PaymentPayload> = []
  const fetchImpl: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    const header = request.headers.get("PAYMENT-SIGNATURE")
    if (header !== null) sent.push(decodePaymentSignatureHeader(header))
    return fetch(request)
  }
  return { sent, fetch: fetchImpl }
}

describe("x402 payments under a grant (ERC-7710)", () => {
  it("the resource answers 402 with the standard's PAYMENT-REQUIRED naming the facilitator", async () => {
    const res = await fetch(`${world.resource.url}/report`)
    assert.strictEqual(res.status, 402)
    const required = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!)
    assert.strictEqual(required.x402Version, 2)
    assert.strictEqual(required.resource.url, `${world.resource.url}/report`)
    assert.strictEqual(required.accepts.length, 1)
    const offer = required.accepts[0]!
    assert.deepStrictEqual(
      { scheme: offer.scheme, network: offer.network, asset: offer.asset, amount: offer.amount, payTo: offer.payTo },
      { scheme: "exact", network: `eip155:${net.chainId}`, asset: usdc, amount: USD(0.01).toString(), payTo: world.merchant }
    )
    assert.strictEqual(offer.extra["assetTransferMethod"], "erc7710")
    assert.strictEqual(offer.extra["facilitatorAddress"], world.facilitator.address)
  })

  it("an EOA agent pays the exact price and gets the report; the chain shows exactly that transfer", async () => {
    const owner = await makeOwner()
    const agent = privateKeyToAccount(generatePrivateKey())
    const grant = await signGrant(owner, agent.address, { recipients: [world.merchant] })
    const wire = recording()
    const pay = payingFetch({ scope, authorizer: localGrantAuthorizer(grant, agent), fetch: wire.fetch })
    const before = [await balanceOf(usdc, owner.address), await balanceOf(usdc, world.merchant)]

    const res = await pay(`${world.resource.url}/report`, { maxAmount: USD(0.05) })
    assert.strictEqual(res.status, 200)
    assert.deepStrictEqual(await res.json(), { report: "all systems nominal", price: USD(0.01).toString() })

    // The header the client sent: the spec's erc7710 payload, from the owner's account.
    assert.strictEqual(wire.sent.length, 1)
    const sent = wire.sent[0]!
    assert.strictEqual(sent.x402Version, 2)
    assert.deepStrictEqual(Object.keys(sent.payload).sort(), ["delegationManager", "delegator", "permissionContext"])
    assert.strictEqual(sent.payload["delegator"], owner.address)
    assert.strictEqual(sent.payload["delegationManager"], net.delegation.DelegationManager)

    const settlement = settlementOf(res)!
    assert.isTrue(settlement.success)
    assert.strictEqual(settlement.payer, owner.address)
    assert.strictEqual(settlement.network, `eip155:${net.chainId}`)
    const receipt = await publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })
    assert.strictEqual(receipt.status, "success")
    assert.strictEqual(receipt.from.toLowerCase(), world.facilitator.address.toLowerCase(), "the facilitator's key redeemed it")
    assert.strictEqual(receipt.to?.toLowerCase(), net.delegation.DelegationManager.toLowerCase())
    assert.strictEqual(transferredIn(receipt, usdc, owner.address, world.merchant), USD(0.01))
    // What a follower sees: one RedeemedDelegation per delegation of the chain (the payment,
    // then the grant), each from the owner's account, redeemed by the facilitator.
    const redeemed = receipt.logs.flatMap((log) => {
      try {
        const event = decodeEventLog({ abi: DelegationManager, topics: log.topics, data: log.data })
        return event.eventName === "RedeemedDelegation" ? [event.args as unknown as { rootDelegator: string; redeemer: string; delegation: { delegate: string; authority: string } }] : []
      } catch {
        return []
      }
    })
    assert.deepStrictEqual(
      redeemed.map((e) => [e.rootDelegator, e.redeemer, e.delegation.delegate, e.delegation.authority]),
      [
        [owner.address, world.facilitator.address, world.facilitator.address, hashDelegation(grant.grant)],
        [owner.address, world.facilitator.address, agent.address, ROOT_AUTHORITY]
      ]
    )
    assert.deepStrictEqual(
      [await balanceOf(usdc, owner.address), await balanceOf(usdc, world.merchant)],
      [before[0]! - USD(0.01), before[1]! + USD(0.01)]
    )
  })

  it("a smart-account agent pays the same way (its ERC-1271 vouches for its key's signature)", async () => {
    const owner = await makeOwner()
    const agent = await smartAccount()
    const grant = await signGrant(owner, agent.address)
    const pay = payingFetch({ scope, authorizer: localGrantAuthorizer(grant, agent.eoa, { delegate: agent.address }) })
    const merchantBefore = await balanceOf(usdc, world.merchant)
    const res = await pay(`${world.resource.url}/report`, { maxAmount: USD(0.01) })
    assert.strictEqual(res.status, 200)
    const settlement = settlementOf(res)!
    assert.isTrue(settlement.success)
    const receipt = await publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })
    assert.strictEqual(transferredIn(receipt, usdc, owner.address, world.merchant), USD(0.01))
    assert.strictEqual(await balanceOf(usdc, world.merchant), merchantBefore + USD(0.01))
  })

  it("upto: the agent allows 1 USDC, the server settles what it used (3 × 0.05), and the rest can never be taken", async () => {
    const owner = await makeOwner()
    const agent = privateKeyToAccount(generatePrivateKey())
    const grant = await signGrant(owner, agent.address)
    const wire = recording()
    const pay = payingFetch({ scope, authorizer: localGrantAuthorizer(grant, agent), fetch: wire.fetch })
    const ownerBefore = await balanceOf(usdc, owner.address)

    // A ceiling under the server's maximum is refused before signing; at the maximum it pays.
    const refused = await pay(`${world.resource.url}/metered?units=3`, { maxAmount: USD(0.5) }).then(() => undefined, (e: unknown) => e)
    assert.include(String(refused), "amount: 1000000 base units is over this call's ceiling of 500000")
    assert.strictEqual(wire.sent.length, 0)

    const res = await pay(`${world.resource.url}/metered?units=3`, { maxAmount: USD(1) })
    assert.strictEqual(res.status, 200)
    assert.deepStrictEqual(await res.json(), { units: "3", charged: USD(0.15).toString() })
    const settlement = settlementOf(res)!
    assert.isTrue(settlement.success)
    assert.strictEqual(settlement.amount, USD(0.15).toString())
    const receipt = await publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })
    assert.strictEqual(transferredIn(receipt, usdc, owner.address, world.merchant), USD(0.15))
    assert.strictEqual(await balanceOf(usdc, owner.address), ownerBefore - USD(0.15))

    // The facilitator asked to settle the remaining 0.85 with the same payment: refused, nothing moves.
    const payment = wire.sent[0]!
    const again = await world.facilitator.facilitator.settle(payment, { ...payment.accepted, amount: USD(0.85).toString() })
    assert.isFalse(again.success)
    assert.strictEqual(again.errorReason, "invalid_erc7710_simulation_failed")
    assert.include(again.errorMessage, "LimitedCallsEnforcer:limit-exceeded")
    assert.strictEqual(await balanceOf(usdc, owner.address), ownerBefore - USD(0.15))
  })
})

describe("a large grant", () => {
  it("a grant with 32 allowed recipients still pays: its PAYMENT-SIGNATURE (about 41 kB) is accepted", async () => {
    const owner = await makeOwner()
    const agent = privateKeyToAccount(generatePrivateKey())
    const recipients = [...Array.from({ length: 31 }, () => privateKeyToAccount(generatePrivateKey()).address), world.merchant]
    const grant = await signGrant(owner, agent.address, { recipients })
    const wire = recording()
    const pay = payingFetch({ scope, authorizer: localGrantAuthorizer(grant, agent), fetch: wire.fetch })
    const res = await pay(`${world.resource.url}/report`, { maxAmount: USD(0.01) })
    assert.strictEqual(res.status, 200)
    assert.isTrue(settlementOf(res)?.success)
    const header = (wire.sent[0]!.payload["permissionContext"] as string).length
    assert.isAbove(header, 16 * 1024, "the context alone is over Node's default header limit")
  })
})
