/**
 * x402 through the service on the local chain: the time from the 402 to the paid 200 when the
 * agent asks the service what to sign (`POST /payments/x402`: the grant's checks under its
 * lock, the reservation, the payment delegation), signs it and pays, and the service's share
 * of it (that request, as the agent's client sees it). The service runs as its own process
 * on an embedded PostgreSQL; the resource server and facilitator run here on loopback.
 * One owner, one EOA agent, one grant (through the service); payments one after another.
 *
 *   npx tsx bench/x402-service.ts                  (about a minute; loopback only)
 *   ITERATIONS=60 WARMUP=5 npx tsx bench/x402-service.ts
 */
import { payingFetch, type PaymentAuthorizer, serviceAuthorizer, settlementOf } from "@das/x402-erc7710"
import { report } from "./support/results.ts"
import { startServiceWorld } from "./support/x402Service.ts"

process.env.DO_NOT_TRACK = "1"
const iterations = Math.min(200, Number(process.env.ITERATIONS ?? 30))
const warmup = Number(process.env.WARMUP ?? 5)

const world = await startServiceWorld()
const { network, usdc, resource, baseUrl, agentToken, grantId, payer, agent } = world
const current = { serviceMs: 0, t402: 0 }
const inner = serviceAuthorizer({ baseUrl, token: agentToken, delegationId: grantId, payer, agent })
const authorizer: PaymentAuthorizer = {
  payer: inner.payer,
  authorize: async (request) => {
    const started = performance.now()
    const payload = await inner.authorize(request)
    current.serviceMs = performance.now() - started
    return payload
  }
}
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
  const rows: Array<{ total: number; service: number }> = []
  for (let i = 0; i < warmup + iterations; i++) {
    Object.assign(current, { serviceMs: 0, t402: 0 })
    const response = await pay(`${resource.url}${path}`, { maxAmount })
    const done = performance.now()
    await response.arrayBuffer()
    if (response.status !== 200 || settlementOf(response)?.success !== true) throw new Error(`${label}: payment ${i} failed (${response.status})`)
    if (i >= warmup) rows.push({ total: done - current.t402, service: current.serviceMs })
  }
  const total = rows.map((r) => r.total)
  const svc = rows.map((r) => r.service)
  const share = rows.map((r) => r.service / r.total)
  console.log(
    `${label}: 402 → 200 p50 ${percentile(total, 50).toFixed(1)} ms, p95 ${percentile(total, 95).toFixed(1)} ms over ${rows.length}; ` +
      `POST /payments/x402 (with the agent's signature) p50 ${percentile(svc, 50).toFixed(1)} ms, p95 ${percentile(svc, 95).toFixed(1)} ms; ` +
      `the service's share ${(100 * percentile(share, 50)).toFixed(0)} % (median of per-payment shares)`
  )
  report({ path: `${label} via service 402 → 200 p50`, service: percentile(total, 50), baseline: 0, unit: "ms", goal: "(reference)", met: true })
  report({ path: `${label} via service 402 → 200 p95`, service: percentile(total, 95), baseline: 0, unit: "ms", goal: "(reference)", met: true })
  report({ path: `${label} service share`, service: percentile(share, 50), baseline: 1, unit: "ratio", goal: "(reference)", met: true })
}

try {
  await measure("x402 exact", "/report", 10_000n)
  await measure("x402 upto", "/metered?units=2", 1_000_000n)
} finally {
  await world.close()
}
process.exit(0)
