/**
 * The whole x402 world in one process, on a local network of its own: a facilitator (ERC-7710
 * method), a resource server on @x402/express charging the local USDC, an owner's smart account
 * and its grant to an agent, and the agent paying 402s with the paying fetch. Prints each step
 * and the balances read on chain, then stops everything.
 *
 *   npm run x402:demo
 */
import { decodePaymentRequiredHeader } from "@x402/core/http"
import { Effect, Redacted } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make } from "../src/chain/LocalNetwork.ts"
import { localGrantAuthorizer } from "../src/payments/x402/Authorizer.ts"
import { payingFetch, settlementOf } from "@das/x402-erc7710"
import { startFacilitator } from "../src/payments/x402/world/FacilitatorService.ts"
import { localParties, type LocalNetworkKeys } from "../src/payments/x402/world/LocalParties.ts"
import { startResourceServer } from "../src/payments/x402/world/ResourceServer.ts"

const step = (text: string) => console.log(`\n== ${text}`)
const show = (value: unknown) => console.log(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v), 2))

const demo = async (network: LocalNetworkKeys) => {
  const parties = localParties(network)
  const usdc = network.tokens.usd
  const facilitator = await startFacilitator({ network, key: await parties.fundedKey(), pollingIntervalMs: 50 })
  const merchant = privateKeyToAccount(generatePrivateKey()).address
  const resource = await startResourceServer({
    facilitatorUrl: facilitator.url,
    chainId: network.chainId,
    asset: { address: usdc.address, decimals: usdc.decimals, symbol: usdc.symbol },
    payTo: merchant,
    price: 10_000n,
    meteredMax: 1_000_000n,
    unitPrice: 50_000n
  })
  try {
    step(`facilitator ${facilitator.url} (settles from ${facilitator.address}); resource ${resource.url} (pays ${merchant})`)
    const owner = await parties.makeOwner(10)
    const agent = privateKeyToAccount(generatePrivateKey())
    const grant = await parties.signGrant(owner, agent.address, {
      budget: 5,
      perAction: 1,
      recipients: [merchant],
      redeemers: [agent.address, facilitator.address]
    })
    show({ owner: owner.address, agent: agent.address, grant: "5 USDC, at most 1 per action, only to the merchant, redeemed by the agent or the facilitator" })

    step("GET /report without paying: 402 and PAYMENT-REQUIRED")
    const unpaid = await fetch(`${resource.url}/report`)
    show({ status: unpaid.status, paymentRequired: decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED")!) })

    const pay = payingFetch({ scope: { chainId: network.chainId, assets: [{ address: usdc.address, decimals: usdc.decimals, symbol: usdc.symbol }] }, authorizer: localGrantAuthorizer(grant, agent) })
    step("the agent pays it (ceiling 0.05 USDC): 200, the report, PAYMENT-RESPONSE")
    const started = performance.now()
    const paid = await pay(`${resource.url}/report`, { maxAmount: 50_000n })
    show({ status: paid.status, ms: Math.round(performance.now() - started), body: await paid.json(), settlement: settlementOf(paid) })

    step("GET /metered?units=3 (upto 1 USDC): the server settles 3 × 0.05")
    const metered = await pay(`${resource.url}/metered?units=3`, { maxAmount: 1_000_000n })
    show({ status: metered.status, body: await metered.json(), settlement: settlementOf(metered) })

    step("a call whose ceiling is under the price is refused before anything is signed")
    show({ refused: await pay(`${resource.url}/report`, { maxAmount: 5_000n }).then(() => "paid?!", (e: unknown) => String(e)) })

    step("balances on chain (USDC base units)")
    show({ owner: await parties.balanceOf(usdc.address, owner.address), merchant: await parties.balanceOf(usdc.address, merchant) })
  } finally {
    await resource.close()
    await facilitator.close()
  }
}

await Effect.runPromise(
  Effect.gen(function*() {
    const network = yield* make()
    yield* Effect.promise(() => demo({ ...network, deployer: privateKeyToAccount(Redacted.value(network.deployerKey)).address }))
  }).pipe(Effect.scoped)
)
process.exit(0)
