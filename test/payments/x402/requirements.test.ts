/**
 * A hostile resource server on loopback answers 402 with crafted PAYMENT-REQUIRED headers.
 * The paying fetch refuses each malformed or hostile offer with a `PaymentRefused` naming the
 * field, before anything is signed (the agent's key signs nothing, the authorizer is never
 * asked) and without sending a paid request. A good offer beside bad ones is still paid.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader } from "@x402/core/http"
import type { PaymentPayload, PaymentRequired } from "@x402/core/types"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import type { Address } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { localGrantAuthorizer } from "../../../src/payments/x402/Authorizer.ts"
import { type AgentSigner, payingFetch, type PaymentAuthorizer, PaymentRefused, type PaymentRequest } from "@das/x402-erc7710"
import { makeOwner, net, randomAddress, scope, signGrant, USD, usdc } from "./support.ts"

/** The hostile server: answers 402 with `document` until a request carries PAYMENT-SIGNATURE (counted, then 200). */
let document: unknown
let rawHeader: string | undefined
const paid: Array<PaymentPayload> = []
let server: Server
let url: string
let signatures = 0
let authorizations = 0
let authorizer: PaymentAuthorizer
let lastRequest: PaymentRequest | undefined

beforeAll(async () => {
  server = createServer((req, res) => {
    const signature = req.headers["payment-signature"]
    if (typeof signature === "string") {
      paid.push(decodePaymentSignatureHeader(signature))
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ served: true }))
      return
    }
    res.writeHead(402, {
      "content-type": "application/json",
      "PAYMENT-REQUIRED": rawHeader ?? encodePaymentRequiredHeader(document as PaymentRequired)
    }).end("{}")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/paid`
  const owner = await makeOwner()
  const key = privateKeyToAccount(generatePrivateKey())
  const agent: AgentSigner = {
    address: key.address,
    signTypedData: (async (args: Parameters<typeof key.signTypedData>[0]) => {
      signatures++
      return key.signTypedData(args)
    }) as AgentSigner["signTypedData"]
  }
  const local = localGrantAuthorizer(await signGrant(owner, agent.address), agent)
  authorizer = {
    payer: local.payer,
    authorize: (request) => {
      authorizations++
      lastRequest = request
      return local.authorize(request)
    }
  }
})
afterAll(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
})

const facilitator = randomAddress()
const offer = (patch: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  scheme: "exact",
  network: `eip155:${net.chainId}`,
  asset: usdc,
  amount: "10000",
  payTo: randomAddress(),
  maxTimeoutSeconds: 60,
  extra: { assetTransferMethod: "erc7710", facilitatorAddress: facilitator, ...extra },
  ...patch
})
const requiredWith = (accepts: ReadonlyArray<unknown>, patch: Record<string, unknown> = {}) => ({
  x402Version: 2,
  error: "PAYMENT-SIGNATURE header is required",
  resource: { url, description: "a paid thing", mimeType: "application/json" },
  accepts,
  ...patch
})

const pay = (init?: { maxAmount?: bigint }) => payingFetch({ scope, authorizer })(url, init ?? { maxAmount: USD(1) })

/** The call is refused on `field` with `says` in its reason; nothing was signed or paid. */
const refusedBeforeSigning = async (doc: unknown, field: string, says: string, init?: { maxAmount?: bigint }) => {
  document = doc
  const before = { signatures, authorizations, paid: paid.length }
  const error = await pay(init).then(() => undefined, (e: unknown) => e)
  assert.instanceOf(error, PaymentRefused, String(error))
  const refusal = error as PaymentRefused
  assert.strictEqual(refusal.field, field, refusal.message)
  assert.include(refusal.reason, says)
  assert.deepStrictEqual({ signatures, authorizations, paid: paid.length }, before, "nothing signed, nothing paid")
}

describe("hostile payment requirements are refused before anything is signed", () => {
  it("network, asset, scheme and method", async () => {
    await refusedBeforeSigning(requiredWith([offer({ network: "eip155:1" })]), "network", "is not the chain this payer holds a grant on")
    await refusedBeforeSigning(requiredWith([offer({ network: "eip155:031337" })]), "network", "not a CAIP-2")
    await refusedBeforeSigning(requiredWith([offer({ network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" })]), "network", "not a CAIP-2")
    await refusedBeforeSigning(requiredWith([offer({ asset: randomAddress() })]), "asset", "is not a token this payer can pay with")
    await refusedBeforeSigning(requiredWith([offer({ scheme: "streaming" })]), "scheme", "is not paid by this client")
    await refusedBeforeSigning(requiredWith([offer({}, { assetTransferMethod: "eip3009" })]), "extra.assetTransferMethod", "must be \"erc7710\"")
    await refusedBeforeSigning(requiredWith([offer({}, { facilitatorAddress: undefined })]), "extra.facilitatorAddress", "address")
  })

  it("amounts: 0, 2^256, fractions, signs, and over the call's ceiling", async () => {
    await refusedBeforeSigning(requiredWith([offer({ amount: "0" })]), "amount", "at least 1 base unit")
    await refusedBeforeSigning(requiredWith([offer({ amount: (1n << 256n).toString() })]), "amount", "larger than a uint256")
    await refusedBeforeSigning(requiredWith([offer({ amount: "9".repeat(100) })]), "amount", "larger than a uint256")
    for (const amount of ["1.5", "-1", "0x10", " 10", "010", 10000, null]) {
      await refusedBeforeSigning(requiredWith([offer({ amount })]), "amount", "whole number of the token's base units")
    }
    await refusedBeforeSigning(requiredWith([offer({ amount: (USD(1) + 1n).toString() })]), "amount", "over this call's ceiling of 1000000")
    await refusedBeforeSigning(requiredWith([offer()]), "maxAmount", "set no ceiling", {})
  })

  it("payTo of the wrong length, a bad checksum, the zero address, not hex", async () => {
    const payTo = randomAddress()
    await refusedBeforeSigning(requiredWith([offer({ payTo: payTo.slice(0, 40) })]), "payTo", "got 38 hex characters")
    await refusedBeforeSigning(requiredWith([offer({ payTo: `${payTo}ab` })]), "payTo", "got 42 hex characters")
    await refusedBeforeSigning(requiredWith([offer({ payTo: "0x" })]), "payTo", "got 0 hex characters")
    const flipped = (payTo.slice(0, 2) + [...payTo.slice(2)].map((c) => (/[a-f]/.test(c) ? c.toUpperCase() : /[A-F]/.test(c) ? c.toLowerCase() : c)).join("")) as Address
    await refusedBeforeSigning(requiredWith([offer({ payTo: flipped })]), "payTo", "bad EIP-55 checksum")
    await refusedBeforeSigning(requiredWith([offer({ payTo: `0x${"0".repeat(40)}` })]), "payTo", "zero address")
    await refusedBeforeSigning(requiredWith([offer({ payTo: `0x${"zz".repeat(20)}` })]), "payTo", "hex")
  })

  it("the resource: a URL with NUL, of 10 kB, not http; a description with control characters", async () => {
    const resource = (patch: Record<string, unknown>) => ({ resource: { url, ...patch } })
    await refusedBeforeSigning(requiredWith([offer()], resource({ url: `${url}\u0000/admin` })), "resource.url", "NUL at position")
    await refusedBeforeSigning(requiredWith([offer()], resource({ url: `${url}?q=${"a".repeat(10_240)}` })), "resource.url", "at most 2048")
    await refusedBeforeSigning(requiredWith([offer()], resource({ url: "javascript:alert(1)" })), "resource.url", "http or https")
    await refusedBeforeSigning(requiredWith([offer()], resource({ url: "/relative" })), "resource.url", "not an absolute URL")
    await refusedBeforeSigning(requiredWith([offer()], resource({ description: "pay \u001b[31mnow" })), "resource.description", "U+001B")
  })

  it("the document: version, empty or oversized accepts, timeouts, several bad offers", async () => {
    await refusedBeforeSigning(requiredWith([offer()], { x402Version: 1 }), "x402Version", "must be 2")
    await refusedBeforeSigning(requiredWith([]), "accepts", "non-empty array")
    await refusedBeforeSigning(requiredWith(Array.from({ length: 33 }, () => offer())), "accepts", "more than 32")
    for (const maxTimeoutSeconds of [0, 86_400, 1.5, "60"]) {
      await refusedBeforeSigning(requiredWith([offer({ maxTimeoutSeconds })]), "maxTimeoutSeconds", "whole number of seconds")
    }
    await refusedBeforeSigning(
      requiredWith([offer({ network: "eip155:1" }), offer({ amount: "0" })]),
      "accepts",
      "[0] network: eip155:1 is not the chain"
    )
  })

  it("a header that is not base64 JSON is refused, nothing signed", async () => {
    rawHeader = "%%%not-base64%%%"
    try {
      const before = { signatures, authorizations, paid: paid.length }
      const error = await pay().then(() => undefined, (e: unknown) => e)
      assert.include(String(error), "payment requirements")
      assert.deepStrictEqual({ signatures, authorizations, paid: paid.length }, before)
    } finally {
      rawHeader = undefined
    }
  })

  it("a good offer beside hostile ones is the one paid, signed once", async () => {
    const good = offer()
    document = requiredWith([offer({ network: "eip155:1" }), offer({ amount: (1n << 256n).toString() }), good])
    const before = { signatures, paid: paid.length }
    const res = await pay()
    assert.strictEqual(res.status, 200)
    assert.deepStrictEqual({ signatures: signatures - before.signatures, paid: paid.length - before.paid }, { signatures: 1, paid: 1 })
    const sent = paid[paid.length - 1]!
    assert.deepStrictEqual(sent.accepted as unknown, good)
    assert.strictEqual(sent.resource?.url, url)
    // The authorizer (later the service) learns the resource as named and as requested, and the deadline.
    assert.deepStrictEqual(lastRequest?.resource, { url, description: "a paid thing", requestedUrl: url })
    assert.strictEqual(lastRequest?.requirement.amount, 10_000n)
    assert.approximately(lastRequest!.validBefore, Math.floor(Date.now() / 1000) + 60, 5)
  })
})
