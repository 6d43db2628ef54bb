/**
 * An agent paying one x402 resource under a grant, on the local network: a fresh owner
 * (smart account, 10 USDC), a fresh agent key, the owner's grant to it (5 USDC, 1 per
 * action), then one paid fetch with the ceiling given.
 *
 *   npm run x402:pay -- --network devnet.json --url http://127.0.0.1:4021/report [--max 50000]
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { localGrantAuthorizer } from "../src/payments/x402/Authorizer.ts"
import { payingFetch, settlementOf } from "@das/x402-erc7710"
import { localParties } from "../src/payments/x402/world/LocalParties.ts"
import { fail, flag, networkFromFlag } from "./x402-common.ts"

const network = networkFromFlag()
const url = flag("url") ?? fail("--url <paid resource> is required")
const max = flag("max") ?? "50000"
if (!/^[0-9]{1,30}$/.test(max)) fail("--max must be a whole number of base units")
const parties = localParties(network)
const owner = await parties.makeOwner(10)
const agent = privateKeyToAccount(generatePrivateKey())
const grant = await parties.signGrant(owner, agent.address, { budget: 5, perAction: 1 })
const usd = network.tokens.usd
const pay = payingFetch({
  scope: { chainId: network.chainId, assets: [{ address: usd.address, decimals: usd.decimals, symbol: usd.symbol }] },
  authorizer: localGrantAuthorizer(grant, agent)
})
try {
  const res = await pay(url, { maxAmount: BigInt(max) })
  console.log(JSON.stringify({ status: res.status, body: await res.text(), settlement: settlementOf(res) ?? null }, null, 2))
} catch (e) {
  fail(String(e))
}
