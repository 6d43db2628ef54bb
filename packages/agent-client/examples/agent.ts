/**
 * An example agent against a running service (`npm start`), using only this package for the
 * agent: it discovers its limits, pays three HTTP 402s under its grant, acts once, hits its limit
 * and asks its owner for more, then acts again under the grant the owner gave it.
 *
 * The script plays the other parties too, each with its own key and the service's endpoints:
 * the owner (signs in, funds its account from the local faucet, grants the agent 0.05 USDC with
 * the service's facilitator as a named redeemer, accepts the agent's request), and a merchant (a
 * stock `@x402/express` server with the ERC-7710 scheme, charging 0.01 USDC per report, settled
 * by the service's facilitator).
 *
 *   npm start                  # in one terminal (local chains, the facilitator on :4020)
 *   npm run example:agent      # BASE_URL, FACILITATOR_URL, OWNER_KEY, AGENT_KEY may be set
 */
import { registerErc7710Server } from "@das/x402-erc7710"
import { HTTPFacilitatorClient } from "@x402/core/server"
import { paymentMiddleware, x402ResourceServer } from "@x402/express"
import express from "express"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { Address, Hex, LocalAccount } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AgentClient, ApiError, callService, type PayerScope, PaymentRefused, settlementOf, signInWith, type UserOpReceipt } from "@das/agent-client"

export interface ExampleOptions {
  readonly baseUrl: string
  /** The service's x402 facilitator (`npm start` serves it on 127.0.0.1:4020). */
  readonly facilitatorUrl: string
  readonly owner: LocalAccount
  readonly agent: LocalAccount
  readonly log: (line: string) => void
}

const PRICE = 10_000n // 0.01 USDC a report, in base units (6 decimals)

/** A merchant: stock @x402/express, one line for the ERC-7710 scheme, its facilitator the service's. */
const startMerchant = async (facilitatorUrl: string, chainId: number, usdc: { address: Address; decimals: number; symbol: string }) => {
  const network = `eip155:${chainId}` as const
  const payTo = privateKeyToAccount(generatePrivateKey()).address
  const server = registerErc7710Server(new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })), { networks: [network], assets: [usdc] })
  const app = express()
  app.use(paymentMiddleware({
    "GET /report": { accepts: { scheme: "exact", network, payTo, price: { amount: PRICE.toString(), asset: usdc.address } }, description: "Today's report" }
  }, server))
  let served = 0
  app.get("/report", (_req, res) => {
    res.json({ report: `report #${++served}` })
  })
  // A payment header carries the delegation chain (~11 kB with one recipient): above Node's 16 KiB default with room.
  const http = createServer({ maxHeaderSize: 64 * 1024 }, app)
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    payTo,
    close: () => new Promise<void>((resolve) => {
      http.close(() => resolve())
      http.closeAllConnections()
    })
  }
}

export const runExampleAgent = async (
  o: ExampleOptions
): Promise<{ readonly delegationId: string; readonly newDelegationId: string; readonly lastReceipt: UserOpReceipt }> => {
  const step = (text: string) => o.log(`\n== ${text}`)
  const say = (text: string) => o.log(`   ${text}`)
  const service = { baseUrl: o.baseUrl }

  // ---- the agent's account (only @das/agent-client): signed in, deployed ---------------------
  step("the agent signs in and deploys its smart account (the grant's delegate)")
  const agent = await AgentClient.signIn({ baseUrl: o.baseUrl, signer: o.agent })
  const agentAccount = agent.session!.accounts[0]!
  const deployed = await agent.deployAccount({ intervalMs: 500 })
  say(`agent ${o.agent.address}, account ${agentAccount.address}: ${deployed === undefined ? "deployed already" : `deployed (${deployed.status})`}`)

  // ---- the owner sets up: its account, test USDC, the facilitator's address, the grant --------
  step("the owner signs in, funds its account with 1 test USDC and grants the agent's account 0.05 USDC")
  const owner = await signInWith(service, o.owner)
  const asOwner = <T>(method: string, path: string, body?: unknown) => callService<T>({ ...service, token: owner.token }, method, path, body)
  const account = owner.accounts[0]!
  await asOwner("POST", "/dev/faucet", { address: account.address, token: "USDC", amount: 1 })
  const networks = await asOwner<ReadonlyArray<{ chainId: number; tokens: { usd: { address: Address; decimals: number; symbol: string } } }>>("GET", "/dev/networks")
  const usdc = networks.find((n) => n.chainId === account.chainId)!.tokens.usd
  const supported = await (await fetch(`${o.facilitatorUrl}/supported`)).json() as { kinds: ReadonlyArray<{ network: string; extra: { facilitatorAddress: Address } }> }
  const facilitator = supported.kinds.find((k) => k.network === `eip155:${account.chainId}`)?.extra.facilitatorAddress
  if (facilitator === undefined) throw new Error(`the facilitator at ${o.facilitatorUrl} does not settle on chain ${account.chainId}`)
  say(`owner ${o.owner.address}, account ${account.address} on chain ${account.chainId}; facilitator ${facilitator}`)
  const build = await asOwner<any>("POST", "/delegations/build", {
    name: "Example agent",
    kind: "agent",
    delegateeAddress: agentAccount.address,
    chainId: account.chainId,
    budgets: [{ token: { symbol: "USDC" }, amount: 0.05 }],
    perActionMax: { token: { symbol: "USDC" }, amount: 0.02 },
    maxActions: 20,
    // The facilitator redeems the agent's payments: the grant names it, or the chain refuses them.
    redeemers: { mode: "named", addresses: [facilitator] }
  })
  const signGrant = async (b: any) => ({
    userOp: { ...b.enableUserOp, signature: await o.owner.signTypedData(b.typedData) },
    userOpHash: b.userOpHash,
    delegationSignatures: await Promise.all(b.delegations.map(async (leg: any) => ({
      permissionId: leg.permissionId,
      signature: await o.owner.signTypedData({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
    })))
  })
  const granted = await asOwner<{ id: string; status: string }>("POST", "/delegations", { ...(await signGrant(build)), intentType: "delegation_enable" })
  say(`grant ${granted.id}: ${granted.status}; ${build.humanSummary}`)
  const merchant = await startMerchant(o.facilitatorUrl, account.chainId, usdc)
  say(`merchant ${merchant.url}/report: 0.01 USDC to ${merchant.payTo}`)

  try {
    // ---- the agent: only @das/agent-client ------------------------------------------------
    step("the agent discovers its grants and limits")
    const grants = await agent.grants({ status: "active" })
    const grant = grants.find((g) => g.id === granted.id)
    if (grant === undefined) throw new Error("the agent does not see its grant")
    const showLimits = async (id: string) => {
      const l = await agent.limits(id)
      for (const b of l.budgets) say(`${b.token}: limit ${b.limit}, spent ${b.spent}, reserved ${b.reserved}, left ${b.left}`)
      say(`at most ${l.perActionMax.amount} ${l.perActionMax.token} an action, ${l.maxActions} actions, until ${l.expiresAt}`)
      return l
    }
    await showLimits(grant.id)

    step("the agent pays three 402s under its grant (x402, ERC-7710)")
    const scope: PayerScope = { chainId: grant.chainId, assets: [usdc] }
    const pay = agent.payingFetch(grant.id, { scope })
    for (let i = 1; i <= 3; i++) {
      const res = await pay(`${merchant.url}/report`, { maxAmount: PRICE })
      if (res.status !== 200) throw new Error(`payment ${i}: the merchant answered ${res.status}`)
      say(`${i}: ${res.status} ${JSON.stringify(await res.json())}, settled in ${settlementOf(res)?.transaction}`)
    }
    // Until the service's chain follower has recorded a settlement, its payment is still held as a
    // reservation (the budget counts it twice, never less): wait for the three records.
    for (let tries = 0; ; tries++) {
      const settled = await agent.payments({ delegationId: grant.id, status: "settled" })
      if (settled.length === 3) break
      if (tries === 300) throw new Error("the three payments were not recorded as settled")
      await new Promise((r) => setTimeout(r, 200))
    }
    say("the service recorded the three settlements from the chain")
    await showLimits(grant.id)

    step("the agent acts once: 0.02 USDC to a shop (built by the service, signed with its key, relayed)")
    const shop = privateKeyToAccount(generatePrivateKey()).address
    const first = await agent.act(grant.id, { recipient: shop, amount: 0.02 }, { intervalMs: 500 })
    say(`operation ${first.receipt.userOpId}: ${first.receipt.status} in ${first.receipt.transactionHash}`)
    if (first.receipt.status !== "included") throw new Error(`the action was not included: ${first.receipt.reason}`)
    await showLimits(grant.id)

    step("the agent tries again: its limit is reached")
    const refused = await agent.act(grant.id, { recipient: shop, amount: 0.01 }).then(() => undefined, (e: unknown) => e)
    if (!(refused instanceof ApiError) || refused.declineReason === undefined) throw new Error(`the action over the limit was not declined: ${String(refused)}`)
    say(`declined: ${refused.declineReason} (${refused.message})`)
    const refusedPayment = await pay(`${merchant.url}/report`, { maxAmount: PRICE }).then(() => undefined, (e: unknown) => e)
    if (!(refusedPayment instanceof PaymentRefused)) throw new Error(`a payment over the limit was not refused: ${String(refusedPayment)}`)
    say(`a payment too: ${refusedPayment.message}`)

    step("the agent asks its owner for more: a budget of 0.10 USDC")
    const asked = await agent.askForMore(grant.id, { budgets: [{ token: { symbol: "USDC" }, amount: 0.1 }] }, "three reports and a purchase used the budget")
    say(`request ${asked.id}: ${asked.status}; ${asked.summary}`)

    // ---- the owner decides (its console or wallet; here its key and the service's endpoints) --
    step("the owner reads the request, signs the replacement grant and accepts")
    const change = await asOwner<{ diff: ReadonlyArray<{ text: string }> }>("GET", `/approvals/changes/${asked.id}`)
    for (const d of change.diff) say(d.text)
    const replacement = await asOwner<any>("POST", `/approvals/changes/${asked.id}/build`)
    const accepted = await asOwner<{ status: string; newDelegationId?: string }>("POST", `/approvals/changes/${asked.id}/accept`, await signGrant(replacement))
    say(`request ${accepted.status}; new grant ${accepted.newDelegationId}`)

    step("the agent sees the answer and acts again under its new grant")
    const settled = await agent.waitForChange(asked.id, { timeoutMs: 120_000 })
    if (settled.status !== "accepted" || settled.newDelegationId === undefined) throw new Error(`the request was not accepted: ${settled.status}`)
    await showLimits(settled.newDelegationId)
    const again = await agent.act(settled.newDelegationId, { recipient: shop, amount: 0.01 }, { intervalMs: 500 })
    say(`operation ${again.receipt.userOpId}: ${again.receipt.status} in ${again.receipt.transactionHash}`)
    if (again.receipt.status !== "included") throw new Error(`the action was not included: ${again.receipt.reason}`)
    await showLimits(settled.newDelegationId)
    return { delegationId: grant.id, newDelegationId: settled.newDelegationId, lastReceipt: again.receipt }
  } finally {
    await merchant.close()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const key = (name: string) => (process.env[name] as Hex | undefined) ?? generatePrivateKey()
  runExampleAgent({
    baseUrl: process.env["BASE_URL"] ?? "http://127.0.0.1:8080",
    facilitatorUrl: process.env["FACILITATOR_URL"] ?? "http://127.0.0.1:4020",
    owner: privateKeyToAccount(key("OWNER_KEY")),
    agent: privateKeyToAccount(key("AGENT_KEY")),
    log: (line) => console.log(line)
  }).then(
    () => console.log("\nexample agent: done"),
    (e: unknown) => {
      console.error("example agent failed:", e)
      process.exit(1)
    }
  )
}
