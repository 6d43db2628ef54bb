/**
 * x402 through the service, in one process tree on a chain of its own: the service (its own
 * process, embedded PostgreSQL), a facilitator and a resource server on loopback, an owner's
 * grant to an EOA agent made through the service; the agent fetches GET /report with its
 * one-line paying fetch (it asks the service what to sign), then the service's record of the
 * payment and the owner's log entry, once the chain follower has read the settlement.
 *
 *   npm run x402:service-demo
 */
import { Effect } from "effect"
import { makeClient } from "../src/client/Client.ts"
import { signIn } from "../src/client/signIn.ts"
import { privateKeyToAccount } from "viem/accounts"
import { payingFetch, serviceAuthorizer, settlementOf } from "@das/x402-erc7710"
import { startServiceWorld } from "../bench/support/x402Service.ts"

process.env.DO_NOT_TRACK = "1"
const world = await startServiceWorld()
const show = (title: string, value: unknown) => console.log(`\n== ${title}\n${JSON.stringify(value, null, 2)}`)
try {
  const pay = payingFetch({
    scope: { chainId: world.network.chainId, assets: [{ address: world.usdc.address, decimals: 6, symbol: "USDC" }] },
    authorizer: serviceAuthorizer({ baseUrl: world.baseUrl, token: world.agentToken, delegationId: world.grantId, payer: world.payer, agent: world.agent })
  })
  const res = await pay(`${world.resource.url}/report`, { maxAmount: 50_000n })
  show(`GET ${world.resource.url}/report (paid through the service)`, { status: res.status, body: await res.json(), settlement: settlementOf(res) ?? null })

  const owner = await Effect.runPromise(Effect.gen(function*() {
    const session = yield* signIn(world.baseUrl, privateKeyToAccount(world.ownerKey))
    return yield* makeClient({ baseUrl: world.baseUrl, token: session.token })
  }))
  for (let i = 0; i < 100; i++) {
    const payments = await Effect.runPromise(owner.payments.list({ query: { delegationId: world.grantId } }))
    const settled = payments.find((p) => p.status === "settled")
    if (settled !== undefined) {
      show("GET /payments/x402 (the owner's view, from the chain)", settled)
      show("GET /activity/{auditEventId} (the owner's log)", await Effect.runPromise(owner.activity.get({ params: { eventId: settled.auditEventId! } })))
      break
    }
    await new Promise((r) => setTimeout(r, 200))
  }
} finally {
  await world.close()
}
process.exit(0)
