/**
 * x402 under a grant with the stock packages and only the scheme package (issue 43, item 1): a
 * merchant's resource server is `@x402/express`'s `paymentMiddleware` over a stock
 * `x402ResourceServer` with one added line (`registerErc7710Server`); the agent pays with
 * `@x402/fetch`'s `wrapFetchWithPayment` over a stock `x402Client` with one added line
 * (`registerErc7710Client`, the service's authorizer); the facilitator is the service's own
 * (src/payments/FacilitatorServer.ts, started with it). Checked on chain: the owner's and the
 * merchant's balances move by the price once; the grant's budget enforcer and call counter show
 * one payment; the settlement receipt holds one transfer. The same PAYMENT-SIGNATURE sent again
 * (to the merchant, and straight to the facilitator's /settle) is refused and moves nothing.
 */
import { afterAll, assert, layer } from "@effect/vitest"
import { LimitedCallsEnforcer, MultiTokenPeriodEnforcer } from "@metamask/delegation-abis"
import { registerErc7710Client, registerErc7710Server, serviceAuthorizer } from "@das/x402-erc7710"
import { x402Client } from "@x402/core/client"
import { HTTPFacilitatorClient } from "@x402/core/server"
import { paymentMiddleware, x402ResourceServer } from "@x402/express"
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch"
import { Duration, Effect } from "effect"
import express from "express"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { type Address, encodeAbiParameters, erc20Abi, type Hex, parseEventLogs } from "viem"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { ownerAndAgent } from "./support.ts"
import { balanceOf, net, publicClient, randomAddress, scope, USD, usdc } from "./x402/support.ts"

process.env.DO_NOT_TRACK = "1"

const network = `eip155:${net.chainId}` as const
const merchant = randomAddress()

/** The merchant: stock @x402/express, its facilitator the service's. */
const startMerchant = async (facilitatorUrl: string) => {
  const server = registerErc7710Server(new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })), {
    networks: [network],
    assets: [{ address: usdc, decimals: 6, symbol: "USDC" }]
  })
  const app = express()
  app.use(paymentMiddleware({
    "GET /report": { accepts: { scheme: "exact", network, payTo: merchant, price: "$0.01" }, description: "Today's report", mimeType: "application/json" }
  }, server))
  app.get("/report", (_req, res) => {
    res.json({ report: "all systems nominal" })
  })
  // A payment header carries the delegation chain (~11 kB): above Node's 16 KiB default with room.
  const http: Server = createServer({ maxHeaderSize: 64 * 1024 }, app)
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      http.close(() => resolve())
      http.closeAllConnections()
    })
  }
}

let merchantServer: Awaited<ReturnType<typeof startMerchant>> | undefined
afterAll(async () => {
  await merchantServer?.close()
})

/** The grant's state on chain: calls redeemed (LimitedCallsEnforcer) and what its budget still allows (MultiTokenPeriodEnforcer). */
const grantOnChain = async (grant: { readonly caveats: ReadonlyArray<{ readonly enforcer: string; readonly terms: Hex }> }, permissionId: Hex) => {
  const dm = net.delegation.DelegationManager
  const enforcers = net.delegation.caveatEnforcers
  const limited = enforcers["LimitedCallsEnforcer"]!
  const multi = enforcers["MultiTokenPeriodEnforcer"]!
  const terms = grant.caveats.find((c) => c.enforcer.toLowerCase() === multi.toLowerCase())!.terms
  const calls = await publicClient.readContract({ address: limited, abi: LimitedCallsEnforcer, functionName: "callCounts", args: [dm, permissionId] }) as bigint
  const [available] = await publicClient.readContract({
    address: multi,
    abi: MultiTokenPeriodEnforcer,
    functionName: "getAvailableAmount",
    // The grant's one budget token is the first of its period terms.
    args: [permissionId, dm, terms, encodeAbiParameters([{ type: "uint256" }], [0n])]
  }) as readonly [bigint, boolean, bigint]
  return { calls, available }
}


layer(TestServerLive({ config: { X402_FACILITATOR_PORT: "0" } }), { timeout: Duration.seconds(180), excludeTestServices: true })(
  "x402 with the stock packages",
  (it) => {
    it.effect("stock @x402/express + stock @x402/fetch + the scheme: paid under the grant, settled once; a replay is refused", () =>
      Effect.gen(function*() {
        const { facilitatorUrl, baseUrl } = yield* TestServer
        assert.isDefined(facilitatorUrl, "the service runs its facilitator")
        // The facilitator announces its settlement address; the owner names it as the grant's redeemer.
        const supported = yield* Effect.promise(() => fetch(`${facilitatorUrl}/supported`).then((r) => r.json() as Promise<{ kinds: ReadonlyArray<{ scheme: string; network: string; extra: { facilitatorAddress: Address } }> }>))
        const kinds = supported.kinds.filter((k) => k.network === network)
        assert.deepStrictEqual(kinds.map((k) => k.scheme).sort(), ["exact", "upto"])
        const facilitator = kinds[0]!.extra.facilitatorAddress
        merchantServer = yield* Effect.promise(() => startMerchant(facilitatorUrl!))

        const p = yield* ownerAndAgent(facilitator, { budget: 1, perAction: 0.05 })
        const owner = p.owner.account.address as Address
        const grant = yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })
        const before = {
          owner: yield* Effect.promise(() => balanceOf(usdc, owner)),
          merchant: yield* Effect.promise(() => balanceOf(usdc, merchant)),
          chain: yield* Effect.promise(() => grantOnChain(p.context.grant, grant.permissionId as Hex))
        }
        assert.strictEqual(before.chain.calls, 0n)
        assert.strictEqual(before.chain.available, USD(1))

        // The agent: stock @x402/fetch, one line for the scheme. The headers it sends are kept for the replay.
        const sent: Array<Headers> = []
        const recording: typeof fetch = (input, init) => {
          const request = new Request(input, init)
          sent.push(new Headers(request.headers))
          return fetch(request)
        }
        const authorizer = serviceAuthorizer({ baseUrl, token: p.token, delegationId: p.grantId, payer: owner, agent: p.agent })
        const pay = wrapFetchWithPayment(recording, registerErc7710Client(new x402Client(), { scope, authorizer, maxAmount: USD(0.05) }))

        const res = yield* Effect.promise(() => pay(`${merchantServer!.url}/report`))
        assert.strictEqual(res.status, 200)
        assert.deepStrictEqual(yield* Effect.promise(() => res.json()), { report: "all systems nominal" })
        const settled = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!)
        assert.isTrue(settled.success)
        assert.strictEqual(settled.network, network)

        // On chain: one transfer of the price, owner → merchant, in the facilitator's redemption.
        const receipt = yield* Effect.promise(() => publicClient.getTransactionReceipt({ hash: settled.transaction as Hex }))
        assert.strictEqual(receipt.status, "success")
        assert.strictEqual(receipt.from.toLowerCase(), facilitator.toLowerCase())
        const transfers = parseEventLogs({ abi: erc20Abi, eventName: "Transfer", logs: receipt.logs })
        assert.deepStrictEqual(
          transfers.map((t) => [t.address.toLowerCase(), t.args.from.toLowerCase(), t.args.to.toLowerCase(), t.args.value]),
          [[usdc.toLowerCase(), owner.toLowerCase(), merchant.toLowerCase(), USD(0.01)]]
        )
        const after = {
          owner: yield* Effect.promise(() => balanceOf(usdc, owner)),
          merchant: yield* Effect.promise(() => balanceOf(usdc, merchant)),
          chain: yield* Effect.promise(() => grantOnChain(p.context.grant, grant.permissionId as Hex))
        }
        assert.strictEqual(after.owner, before.owner - USD(0.01))
        assert.strictEqual(after.merchant, before.merchant + USD(0.01))
        // The grant's own enforcers: one redemption, the budget lower by the price.
        assert.strictEqual(after.chain.calls, 1n)
        assert.strictEqual(after.chain.available, USD(1) - USD(0.01))

        // Replay: the very PAYMENT-SIGNATURE again, to the merchant and straight to the facilitator.
        const signed = sent.map((h) => h.get("PAYMENT-SIGNATURE")).filter((h): h is string => h !== null)
        assert.strictEqual(signed.length, 1)
        const replay = yield* Effect.promise(() => fetch(`${merchantServer!.url}/report`, { headers: { "PAYMENT-SIGNATURE": signed[0]! } }))
        assert.strictEqual(replay.status, 402)
        const payload = JSON.parse(Buffer.from(signed[0]!, "base64").toString("utf8"))
        const direct = yield* Effect.promise(() =>
          fetch(`${facilitatorUrl}/settle`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted })
          }).then((r) => r.json() as Promise<{ success: boolean; transaction: string }>)
        )
        assert.isFalse(direct.success)
        assert.strictEqual(direct.transaction, "")
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, owner)), after.owner)
        assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, merchant)), after.merchant)
        assert.deepStrictEqual(yield* Effect.promise(() => grantOnChain(p.context.grant, grant.permissionId as Hex)), after.chain)

        // The service recorded the payment once, settled by its facilitator, debited once.
        const payment = yield* waitFor("the payment settled", p.owner.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
          Effect.orDie,
          Effect.map((list) => (list.length === 1 && list[0]!.status === "settled" ? list[0] : undefined))
        ))
        assert.strictEqual(payment.txHash, settled.transaction.toLowerCase())
        assert.strictEqual(payment.facilitator.toLowerCase(), facilitator.toLowerCase())
        const spent = (yield* p.owner.api.delegations.get({ params: { delegationId: p.grantId } })).spentToDate[0]!
        assert.strictEqual(spent.spent, 0.01)
      }))

    it.effect("the stock client with the scheme refuses a hostile 402 before anything is signed or paid", () =>
      Effect.gen(function*() {
        // A server answering 402 with a crafted PAYMENT-REQUIRED; it counts the paid retries it gets.
        let document: unknown
        let paidRetries = 0
        const app = express()
        app.get("/x", (req, res) => {
          if (req.header("PAYMENT-SIGNATURE") !== undefined) paidRetries++
          res.status(402).setHeader("PAYMENT-REQUIRED", Buffer.from(JSON.stringify(document)).toString("base64")).json({})
        })
        const http = createServer(app)
        yield* Effect.promise(() => new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve)))
        const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/x`
        let asked = 0
        const authorizer = { authorize: async () => {
          asked++
          throw new Error("must not be reached")
        } }
        const pay = wrapFetchWithPayment(fetch, registerErc7710Client(new x402Client(), { scope, authorizer, maxAmount: USD(0.05) }))
        const offer = (o: Record<string, unknown> = {}) => ({
          scheme: "exact", network, asset: usdc, amount: USD(0.01).toString(), payTo: merchant, maxTimeoutSeconds: 60,
          extra: { assetTransferMethod: "erc7710", facilitatorAddress: randomAddress() }, ...o
        })
        const hostile: ReadonlyArray<readonly [string, unknown]> = [
          ["over the agent's ceiling", { x402Version: 2, resource: { url }, accepts: [offer({ amount: USD(0.06).toString() })] }],
          ["a resource URL with a control character", { x402Version: 2, resource: { url: `${url}\u0000` }, accepts: [offer()] }],
          ["no facilitator to delegate to", { x402Version: 2, resource: { url }, accepts: [offer({ extra: { assetTransferMethod: "erc7710" } })] }],
          ["a token outside the agent's scope", { x402Version: 2, resource: { url }, accepts: [offer({ asset: randomAddress() })] }]
        ]
        try {
          for (const [what, doc] of hostile) {
            document = doc
            const outcome = yield* Effect.promise(() => pay(url).then((r) => `answered ${r.status}`, (e: unknown) => `refused: ${String(e)}`))
            assert.match(outcome, /^refused/, what)
          }
        } finally {
          yield* Effect.promise(() => new Promise<void>((resolve) => {
            http.close(() => resolve())
            http.closeAllConnections()
          }))
        }
        assert.strictEqual(asked, 0, "nothing was authorized or signed")
        assert.strictEqual(paidRetries, 0, "no paid request was sent")
      }))
  }
)
