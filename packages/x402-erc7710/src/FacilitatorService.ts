/**
 * An x402 facilitator service: `@x402/core`'s `x402Facilitator` with the ERC-7710 mechanism
 * registered for `exact` and `upto` on each chain given, served over HTTP as the spec's
 * facilitator interface (GET /supported, POST /verify, POST /settle; coinbase/x402
 * `specs/x402-specification-v2.md` §7) and reached by resource servers through
 * `HTTPFacilitatorClient`. The delegated-authority service runs one inside `npm start`; tests,
 * demos and bench start their own.
 */
import { x402Facilitator } from "@x402/core/facilitator"
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types"
import express, { type NextFunction, type Request, type Response } from "express"
import { type Address, createPublicClient, createWalletClient, defineChain, type Hex, http, nonceManager, type PublicClient } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Erc7710FacilitatorScheme, type FacilitatorOptions } from "./Facilitator.ts"
import { type DelegationEnvironment, networkOf, SCHEMES } from "./Wire.ts"

/** A chain the facilitator settles on. */
export interface FacilitatorNetwork {
  readonly chainId: number
  readonly rpcUrl: string
  readonly delegation: DelegationEnvironment
}

export interface FacilitatorServiceOptions {
  readonly network: FacilitatorNetwork
  /** The settlement key: it pays the gas of every settlement. */
  readonly key: Hex
  /** Receipt polling (ms): small on a local chain. */
  readonly pollingIntervalMs?: number
  readonly limits?: Pick<FacilitatorOptions, "maxGas" | "minSecondsLeft" | "clockSkewSeconds">
}

export interface Erc7710FacilitatorOn {
  readonly schemes: ReadonlyArray<Erc7710FacilitatorScheme>
  /** The settlement address on this chain: the delegate every payment delegation must name. */
  readonly address: Address
  readonly publicClient: PublicClient
}

/**
 * Registers the ERC-7710 mechanism (`exact` and `upto`) for one chain on a stock
 * `x402Facilitator`, settling from `key`. Call it once per chain; one facilitator serves them all.
 */
export const registerErc7710Facilitator = (facilitator: x402Facilitator, options: FacilitatorServiceOptions): Erc7710FacilitatorOn => {
  const chain = defineChain({
    id: options.network.chainId,
    name: `chain ${options.network.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.network.rpcUrl] } }
  })
  const transport = http(options.network.rpcUrl)
  const pollingInterval = options.pollingIntervalMs ?? 100
  const publicClient = createPublicClient({ chain, transport, pollingInterval }) as PublicClient
  // Settlements may run concurrently: the nonce manager hands out nonces in order.
  const account = privateKeyToAccount(options.key, { nonceManager })
  const walletClient = createWalletClient({ chain, transport, account, pollingInterval })
  const schemes = SCHEMES.map((scheme) =>
    new Erc7710FacilitatorScheme(scheme, {
      chainId: options.network.chainId,
      environment: options.network.delegation,
      publicClient,
      walletClient,
      ...options.limits
    })
  )
  for (const scheme of schemes) facilitator.register(networkOf(options.network.chainId), scheme)
  return { schemes, address: account.address, publicClient }
}

/** A facilitator for one chain with both schemes registered, and the clients it settles with. */
export const makeFacilitator = (options: FacilitatorServiceOptions) => {
  const facilitator = new x402Facilitator()
  return { facilitator, ...registerErc7710Facilitator(facilitator, options) }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The body of /verify and /settle, or the field at fault. */
const requestOf = (body: unknown): { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements } | { field: string } => {
  if (!isRecord(body)) return { field: "body" }
  if (typeof body["x402Version"] !== "number") return { field: "x402Version" }
  if (!isRecord(body["paymentPayload"])) return { field: "paymentPayload" }
  if (!isRecord(body["paymentRequirements"])) return { field: "paymentRequirements" }
  return {
    paymentPayload: body["paymentPayload"] as unknown as PaymentPayload,
    paymentRequirements: body["paymentRequirements"] as unknown as PaymentRequirements
  }
}

/** The facilitator's HTTP interface (an express app: serve it with `app.listen`, or mount it under a path). */
export const facilitatorApp = (facilitator: x402Facilitator) => {
  const app = express()
  app.disable("x-powered-by")
  app.use(express.json({ limit: "64kb" }))
  app.get("/supported", (_req, res) => {
    res.json(facilitator.getSupported())
  })
  for (const operation of ["verify", "settle"] as const) {
    app.post(`/${operation}`, async (req: Request, res: Response) => {
      const request = requestOf(req.body)
      if ("field" in request) {
        res.status(400).json({ error: `${request.field} is missing or malformed`, field: request.field })
        return
      }
      try {
        const result = operation === "verify"
          ? await facilitator.verify(request.paymentPayload, request.paymentRequirements)
          : await facilitator.settle(request.paymentPayload, request.paymentRequirements)
        res.json(result)
      } catch (e) {
        // The core throws when no mechanism is registered for the scheme and network asked for.
        const message = e instanceof Error ? e.message : String(e)
        const unsupported = message.startsWith("No facilitator registered")
        res.status(unsupported ? 400 : 500).json({ error: unsupported ? message : "internal error" })
      }
    })
  }
  // Malformed JSON and oversized bodies: a 400 that says so, never a stack trace.
  app.use((error: { status?: number; type?: string; message?: string }, _req: Request, res: Response, _next: NextFunction) => {
    const status = error.status !== undefined && error.status >= 400 && error.status < 500 ? error.status : 500
    res.status(status).json({ error: status === 500 ? "internal error" : (error.type ?? error.message ?? "bad request") })
  })
  return app
}
