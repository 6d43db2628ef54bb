/**
 * A paid resource on the x402 packages (@x402/express + @x402/core), charging the local USDC
 * through a facilitator:
 *
 *   npm run x402:resource -- --network devnet.json --facilitator http://127.0.0.1:4020 \
 *     [--port 4021] [--pay-to 0x…] [--price 10000]
 *
 * GET /report (exact, --price base units), GET /metered?units=n (upto 1 USDC, 0.05 a unit),
 * GET /free. Without --pay-to the merchant is a fresh address (printed).
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { startResourceServer } from "../src/payments/x402/world/ResourceServer.ts"
import { addressFlag, fail, flag, networkFromFlag, onStop } from "./x402-common.ts"

const network = networkFromFlag()
const facilitatorUrl = flag("facilitator") ?? fail("--facilitator <url> is required (npm run x402:facilitator prints it)")
const payTo = addressFlag("pay-to") ?? privateKeyToAccount(generatePrivateKey()).address
const price = flag("price") ?? "10000"
if (!/^[1-9][0-9]{0,20}$/.test(price)) fail("--price must be a whole number of base units")
const resource = await startResourceServer({
  facilitatorUrl,
  chainId: network.chainId,
  asset: { address: network.tokens.usd.address, decimals: network.tokens.usd.decimals, symbol: network.tokens.usd.symbol },
  payTo,
  price: BigInt(price),
  meteredMax: 1_000_000n,
  unitPrice: 50_000n,
  port: Number(flag("port") ?? 4021)
})
console.log(JSON.stringify({ url: resource.url, routes: ["GET /report", "GET /metered?units=n", "GET /free"], payTo, price }, null, 2))
console.error("x402 resource server listening; Ctrl-C to stop")
onStop(resource.close)
