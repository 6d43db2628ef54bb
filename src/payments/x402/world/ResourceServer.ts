/**
 * A paid HTTP resource built on the x402 packages: `@x402/express`'s payment middleware over
 * an `x402ResourceServer` that reaches a facilitator with `HTTPFacilitatorClient`, offering
 * the ERC-7710 method (ServerScheme.ts) in a local token. Routes:
 *
 *   GET /report           exact: `price` base units for a JSON report
 *   GET /metered?units=n  upto: allows up to `meteredMax`, settles n × `unitPrice` (capped)
 *   GET /free             no payment
 *
 * Used by `npm run x402:resource`, the demo, tests and bench.
 */
import { HTTPFacilitatorClient, x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server"
import type { RoutesConfig } from "@x402/core/server"
import { paymentMiddlewareFromHTTPServer, setSettlementOverrides } from "@x402/express"
import express from "express"
import type { Address } from "viem"
import { ERC7710, Erc7710ServerScheme, networkOf, type PayableAsset } from "@das/x402-erc7710"
import { listen, type Listening } from "./Listen.ts"

export interface ResourceServerOptions {
  readonly facilitatorUrl: string
  readonly chainId: number
  readonly asset: PayableAsset
  readonly payTo: Address
  /** GET /report's price, base units. */
  readonly price: bigint
  /** GET /metered: the most one request may cost, and the price of one unit. */
  readonly meteredMax: bigint
  readonly unitPrice: bigint
  readonly maxTimeoutSeconds?: number
  readonly host?: string
  readonly port?: number
}

export const startResourceServer = async (options: ResourceServerOptions): Promise<Listening> => {
  const network = networkOf(options.chainId)
  const offer = (scheme: "exact" | "upto", amount: bigint) => ({
    scheme,
    network,
    payTo: options.payTo,
    price: { amount: amount.toString(), asset: options.asset.address },
    maxTimeoutSeconds: options.maxTimeoutSeconds ?? 60,
    extra: { assetTransferMethod: ERC7710 }
  })
  const routes: RoutesConfig = {
    "GET /report": { accepts: offer("exact", options.price), description: "Today's report", mimeType: "application/json" },
    "GET /metered": { accepts: offer("upto", options.meteredMax), description: "Metered units", mimeType: "application/json" }
  }
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: options.facilitatorUrl, timeoutMs: 30_000 }))
    .register(network, new Erc7710ServerScheme("exact", [options.asset]))
    .register(network, new Erc7710ServerScheme("upto", [options.asset]))
  const http = new x402HTTPResourceServer(server, routes)
  // Fetch the facilitator's /supported now: a misconfigured world fails at start, not at the first request.
  await http.initialize()

  const app = express()
  app.disable("x-powered-by")
  app.use(paymentMiddlewareFromHTTPServer(http, undefined, undefined, false))
  app.get("/report", (_req, res) => {
    res.json({ report: "all systems nominal", price: options.price.toString() })
  })
  app.get("/metered", (req, res) => {
    const units = typeof req.query["units"] === "string" && /^[0-9]{1,6}$/.test(req.query["units"]) ? BigInt(req.query["units"]) : 1n
    const used = units * options.unitPrice
    const charged = used > options.meteredMax ? options.meteredMax : used
    // upto: the facilitator settles this, at most what the client's delegation allows.
    setSettlementOverrides(res, { amount: charged.toString() })
    res.json({ units: units.toString(), charged: charged.toString() })
  })
  app.get("/free", (_req, res) => {
    res.json({ free: true })
  })
  return listen(app, {
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.port === undefined ? {} : { port: options.port })
  })
}
