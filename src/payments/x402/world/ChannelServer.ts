/**
 * The loopback world of payment channels (tests, bench): the VoucherEnforcer deployed on a
 * local chain, and a merchant's HTTP server charging a price per request in vouchers
 * (packages/x402-erc7710: `channelMerchant`). Each request carries a `PAYMENT-VOUCHER` header;
 * the first of a channel also its permission context. The merchant settles when it chooses.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { type Address, createPublicClient, createWalletClient, type Hex, http, type PublicClient } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../../chain/Chain.ts"
import { voucherEnforcerAbi, voucherEnforcerBytecode } from "../../../chain/contracts/Vouchers.ts"
import { channelMerchant, VOUCHER_HEADER } from "@das/x402-erc7710"
import { MAX_HEADER_BYTES } from "./Listen.ts"
import type { LocalNetworkKeys } from "./LocalParties.ts"

type Network = Pick<LocalNetworkKeys, "chainId" | "rpcUrl" | "delegation">

/** Deploys the VoucherEnforcer from `key` (holding ETH); its address. */
export const deployVoucherEnforcer = async (network: Network, key: Hex): Promise<Address> => {
  const chain = viemChainOf(network)
  const publicClient = createPublicClient({ chain, transport: http(network.rpcUrl), pollingInterval: 50 })
  const wallet = createWalletClient({ chain, transport: http(network.rpcUrl), account: privateKeyToAccount(key) })
  const hash = await wallet.deployContract({ abi: voucherEnforcerAbi, bytecode: voucherEnforcerBytecode })
  const receipt = await publicClient.waitForTransactionReceipt({ hash })
  if (receipt.contractAddress === null || receipt.contractAddress === undefined) throw new Error("the VoucherEnforcer was not deployed")
  return receipt.contractAddress
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "cache-control": "no-store" })
  res.end(text)
}

/** A merchant charging `price` of `token` per `GET /item`, paid by vouchers into channels to `payTo`, settled from `key`. */
export const startChannelServer = async (input: {
  readonly network: Network
  readonly enforcer: Address
  readonly key: Hex
  readonly token: Address
  readonly payTo: Address
  readonly price: bigint
  /** Called with each paid request's check time in ms (the bench's split). */
  readonly onCheck?: (ms: number) => void
}) => {
  const chain = viemChainOf(input.network)
  const publicClient = createPublicClient({ chain, transport: http(input.network.rpcUrl), pollingInterval: 50 }) as PublicClient
  const walletClient = createWalletClient({ chain, transport: http(input.network.rpcUrl), account: privateKeyToAccount(input.key), pollingInterval: 50 })
  const merchant = channelMerchant({
    chainId: input.network.chainId,
    environment: input.network.delegation,
    enforcer: input.enforcer,
    token: input.token,
    payTo: input.payTo,
    publicClient,
    walletClient
  })
  let served = 0
  const offer = {
    price: input.price.toString(),
    asset: input.token,
    payTo: input.payTo,
    merchant: merchant.merchant,
    enforcer: input.enforcer,
    chainId: input.network.chainId
  }
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "GET" || req.url !== "/item") return json(res, 404, { error: "not found" })
    const header = req.headers[VOUCHER_HEADER.toLowerCase()]
    if (typeof header !== "string") return json(res, 402, { error: "payment required", accepts: offer })
    const started = performance.now()
    const accepted = await merchant.pay(header, input.price)
    input.onCheck?.(performance.now() - started)
    if (!accepted.ok) return json(res, 402, { error: accepted.reason, accepts: offer })
    served++
    return json(res, 200, { item: served, channel: accepted.channel.id, paid: accepted.channel.highest?.cumulativeAmount.toString() })
  }
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => {
    handle(req, res).catch((e: unknown) => json(res, 500, { error: e instanceof Error ? e.message : String(e) }))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    merchant,
    offer,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done())
        server.closeAllConnections()
      })
  }
}
export type ChannelServer = Awaited<ReturnType<typeof startChannelServer>>
