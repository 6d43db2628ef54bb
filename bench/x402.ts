/**
 * x402 under a grant on the local chain: the time from the 402 to the paid 200 (the client
 * checks the requirements and signs the payment delegation, the resource server has the
 * facilitator verify it, serves, and has it settle: `redeemDelegations` mined and its receipt
 * read), p50 and p95, and how much of it is each part, from the facilitator's own verify /
 * settle hooks and the client's signing. One owner, one EOA agent, one grant; payments one
 * after another (each is one of the grant's actions), `exact` then `upto`.
 *
 *   npm run x402:bench                       (about 40 s; loopback only)
 *   ITERATIONS=60 WARMUP=5 npm run x402:bench
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make as startLocalNetwork } from "../src/chain/LocalNetwork.ts"
import { localGrantAuthorizer } from "../src/payments/x402/Authorizer.ts"
import { payingFetch, type PaymentAuthorizer, settlementOf } from "@das/x402-erc7710"
import { startFacilitator } from "../src/payments/x402/world/FacilitatorService.ts"
import { localParties } from "../src/payments/x402/world/LocalParties.ts"
import { startResourceServer } from "../src/payments/x402/world/ResourceServer.ts"
import { report } from "./support/results.ts"

const iterations = Math.min(200, Number(process.env.ITERATIONS ?? 30))
const warmup = Number(process.env.WARMUP ?? 5)

const scope = Effect.runSync(Scope.make())
const network = await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope)))
const keys = { ...network, deployer: privateKeyToAccount(Redacted.value(network.deployerKey)).address }
const parties = localParties(keys)
const usdc = network.tokens.usd
const facilitator = await startFacilitator({ network: keys, key: await parties.fundedKey(), pollingIntervalMs: 20 })
const merchant = privateKeyToAccount(generatePrivateKey()).address
const resource = await startResourceServer({
  facilitatorUrl: facilitator.url,
  chainId: network.chainId,
  asset: { address: usdc.address, decimals: usdc.decimals, symbol: usdc.symbol },
  payTo: merchant,
  price: 10_000n,
  meteredMax: 1_000_000n,
  unitPrice: 50_000n
})

// The facilitator's own timings: from its hooks, around the mechanism's verify and settle.
let verifyStarted = 0
let settleStarted = 0
const current = { verifyMs: 0, settleMs: 0, signMs: 0, t402: 0 }
facilitator.facilitator
  .onBeforeVerify(async () => {
    verifyStarted = performance.now()
  })
  .onAfterVerify(async () => {
    current.verifyMs = performance.now() - verifyStarted
  })
  .onBeforeSettle(async () => {
    settleStarted = performance.now()
  })
  .onAfterSettle(async () => {
    current.settleMs = performance.now() - settleStarted
  })

const owner = await parties.makeOwner(1_000)
const agent = privateKeyToAccount(generatePrivateKey())
const grant = await parties.signGrant(owner, agent.address, { budget: 500, perAction: 5, maxActions: 1_000 })
const local = localGrantAuthorizer(grant, agent)
const authorizer: PaymentAuthorizer = {
  payer: local.payer,
  authorize: async (request) => {
    const started = performance.now()
    const payload = await local.authorize(request)
    current.signMs = performance.now() - started
    return payload
  }
}
// The moment the 402 arrives: the wrapped fetch sees every response.
const timedFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init)
  if (response.status === 402) current.t402 = performance.now()
  return response
}
const pay = payingFetch({ scope: { chainId: network.chainId, assets: [{ address: usdc.address, decimals: 6, symbol: "USDC" }] }, authorizer, fetch: timedFetch })

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

const measure = async (label: string, path: string, maxAmount: bigint) => {
  const rows: Array<{ total: number; settle: number; verify: number; sign: number; gas: number }> = []
  for (let i = 0; i < warmup + iterations; i++) {
    Object.assign(current, { verifyMs: 0, settleMs: 0, signMs: 0, t402: 0 })
    const response = await pay(`${resource.url}${path}`, { maxAmount })
    const done = performance.now()
    await response.arrayBuffer()
    const settlement = settlementOf(response)
    if (response.status !== 200 || settlement?.success !== true) throw new Error(`${label}: payment ${i} failed (${response.status})`)
    // Outside the timed part: the settlement's gas, from its receipt.
    const receipt = await parties.publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` })
    if (i >= warmup) rows.push({ total: done - current.t402, settle: current.settleMs, verify: current.verifyMs, sign: current.signMs, gas: Number(receipt.gasUsed) })
  }
  const col = (k: keyof typeof rows[number]) => rows.map((r) => r[k])
  const p50 = percentile(col("total"), 50)
  const p95 = percentile(col("total"), 95)
  const settle50 = percentile(col("settle"), 50)
  const share = rows.map((r) => r.settle / r.total)
  console.log(
    `${label}: 402 → 200 p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms over ${rows.length}; ` +
      `settle p50 ${settle50.toFixed(1)} ms (p95 ${percentile(col("settle"), 95).toFixed(1)}), ` +
      `verify p50 ${percentile(col("verify"), 50).toFixed(1)} ms, sign p50 ${percentile(col("sign"), 50).toFixed(1)} ms; ` +
      `settlement is ${(100 * percentile(share, 50)).toFixed(0)} % of it (median of per-payment shares); ` +
      `settlement gas ${percentile(col("gas"), 50)}`
  )
  report({ path: `${label} 402 → 200 p50`, service: p50, baseline: 0, unit: "ms", goal: "(reference)", met: true })
  report({ path: `${label} 402 → 200 p95`, service: p95, baseline: 0, unit: "ms", goal: "(reference)", met: true })
  report({ path: `${label} settlement share`, service: percentile(share, 50), baseline: 1, unit: "ratio", goal: "(reference)", met: true })
}

try {
  await measure("x402 exact", "/report", 10_000n)
  await measure("x402 upto", "/metered?units=2", 1_000_000n)
} finally {
  await resource.close()
  await facilitator.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
process.exit(0)
