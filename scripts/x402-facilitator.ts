/**
 * A stand-alone x402 facilitator with the ERC-7710 method (exact, upto) on a network described in a
 * file (`npm start` runs its own on port 4020: docs/payments.md; this one is for `npm run devnet`):
 *
 *   npm run devnet > devnet.json                       # in one terminal
 *   npm run x402:facilitator -- --network devnet.json [--port 4020] [--key 0x…]
 *
 * Without --key (or X402_FACILITATOR_KEY) it settles from a fresh key given 10 ETH
 * (anvil_setBalance: local networks only). The file needs no `deployerKey` (`GET /dev/networks`'
 * answer is enough with --key). Serves GET /supported, POST /verify, POST /settle.
 */
import type { Hex } from "viem"
import { startFacilitator } from "../src/payments/x402/world/FacilitatorService.ts"
import { localParties } from "../src/payments/x402/world/LocalParties.ts"
import { fail, flag, networkFromFlag, onStop } from "./x402-common.ts"

const network = networkFromFlag()
const givenKey = flag("key") ?? process.env["X402_FACILITATOR_KEY"]
if (givenKey !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(givenKey)) fail("--key must be a 32-byte hex private key")
const key = (givenKey as Hex | undefined) ?? await localParties(network).fundedKey()
const port = Number(flag("port") ?? 4020)
const facilitator = await startFacilitator({ network, key, port, pollingIntervalMs: 100 })
console.log(JSON.stringify({ url: facilitator.url, settlementAddress: facilitator.address, network: `eip155:${network.chainId}` }, null, 2))
console.error("x402 facilitator listening; Ctrl-C to stop")
onStop(facilitator.close)
