/**
 * Approvals above a threshold (issue 25, "Measures"):
 *   1. gas of a delegated action with the approval caveat, below and above the threshold (1 of 3
 *      with 1 approval, 2 of 3 with 2), beside the same grant without it (bench/support/approval-gas.ts);
 *   2. the time from an approval request created — the agent's above-threshold
 *      `POST /delegations/{id}/actions`, timed from before it is sent — to the owner's webhook
 *      receiver (a real loopback HTTP server) getting the "Approval needed" delivery, p50/p99.
 *
 * The service runs as `src/main.ts` in its default configuration except: loopback webhooks
 * allowed (the receiver is on 127.0.0.1), rate limits and sponsorship quotas off (a benchmark
 * sends more than a person), the anchor off. Each request is a different amount, so each opens a
 * request of its own; they are sent one after another, each waiting for its delivery.
 *
 *   npx tsx bench/approvals.ts [requests=100]
 */
import { Effect, Exit, Scope } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromJson, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { startReceiver } from "../test/notifications/webhooks/Receiver.ts"
import { approvalGas } from "./support/approval-gas.ts"
import { grantThroughService } from "./support/grants.ts"
import { freePort, serviceEnv, startPostgres, startProcess } from "./support/processes.ts"
import { percentile, report } from "./support/results.ts"

process.env.DO_NOT_TRACK = "1"

const requests = Math.max(30, Number(process.argv[2] ?? 100))

const scope = Effect.runSync(Scope.make())
const description = await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope)))
const network = toJson(description)

// Cleaned up whatever happens (a failed measure, a service that never became ready).
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined
let pg: Awaited<ReturnType<typeof startPostgres>> | undefined
let service: Awaited<ReturnType<typeof startProcess>> | undefined
try {
  // 1. Gas, on the same local network before the service starts.
  const gasRows = await approvalGas(description, 2)
  const base = gasRows[0]!
  console.log(`${"shape".padEnd(54)}${"1st action".padEnd(12)}2nd action   (gasUsed of the redemption transaction)`)
  for (const r of gasRows) console.log(`${r.shape.padEnd(54)}${r.gas[0]!.toString().padEnd(12)}${r.gas[1]}`)
  for (const r of gasRows.slice(1)) {
    const d = r.gas.map((g, i) => g - base.gas[i]!)
    console.log(`  ${r.shape} vs no rule: 1st ${d[0]! >= 0n ? "+" : ""}${d[0]}, 2nd ${d[1]! >= 0n ? "+" : ""}${d[1]}`)
    // As a ratio to the same action without the rule (the table has no gas unit); the figures are printed above.
    report({ path: `gas of the 2nd action, ${r.shape}: ${r.gas[1]} over ${base.gas[1]} without the rule`, service: Number(r.gas[1]) / Number(base.gas[1]), baseline: 1, unit: "ratio", goal: "(reference)", met: true })
  }

  // 2. Request → owner's webhook, through the service.
  const rx = await startReceiver()
  receiver = rx
  const db = await startPostgres()
  pg = db
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  service = await startProcess(
    "src/main.ts",
    serviceEnv({ databaseUrl: db.url, port, networks: network }, { WEBHOOKS_ALLOW_LOOPBACK: "true", ANCHOR_INTERVAL: "0 seconds" }),
    `${baseUrl}/health/ready`
  )
  const net = fromJson(network)
  const approvers = [0, 1, 2].map(() => privateKeyToAccount(generatePrivateKey()).address)

  // When each request's "Approval needed" reached the receiver, by request id (it may arrive before the 422 does).
  const arrived = new Map<string, number>()
  rx.onRequest = (r) => {
    const data = (JSON.parse(r.body) as { data: { relatedType?: string; relatedId?: string; title?: string } | null }).data
    if (data?.relatedType === "approval_request" && data.title === "Approval needed" && data.relatedId !== undefined) {
      arrived.set(data.relatedId, performance.now())
    }
  }

  const setup = await grantThroughService({
    baseUrl,
    net,
    name: "bench approvals",
    approval: { required: 2, approvers, thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] },
    ownerReady: (owner) => owner.notifications.createWebhook({ payload: { url: `${rx.url}/owner` } })
  })
  const recipient = privateKeyToAccount(generatePrivateKey()).address

  let k = 0
  /** One above-threshold action: its request id, the time to its 422 and to the owner's webhook (ms). */
  const one = async () => {
    const t0 = performance.now()
    const refused = await Effect.runPromise(Effect.flip(setup.delegate.delegations.act({
      params: { delegationId: setup.delegationId },
      payload: { recipient, amount: Number((2 + 0.001 * ++k).toFixed(3)) }
    })))
    const answered = performance.now() - t0
    const id = (refused as unknown as { details?: { approvalId?: string } }).details?.approvalId
    if (id === undefined) throw new Error(`not an approval request: ${JSON.stringify(refused)}`)
    await rx.waitFor(() => arrived.has(id), 30_000)
    return { answered, delivered: arrived.get(id)! - t0 }
  }
  for (let i = 0; i < 5; i++) await one() // warm-up
  const answered: Array<number> = []
  const delivered: Array<number> = []
  for (let i = 0; i < requests; i++) {
    const r = await one()
    answered.push(r.answered)
    delivered.push(r.delivered)
  }
  const p = (xs: ReadonlyArray<number>) => ({ p50: percentile(xs, 0.5), p99: percentile(xs, 0.99) })
  const a = p(answered)
  const d = p(delivered)
  console.log(`approval request → owner's webhook, ${requests} requests (ms)`)
  console.log(`  the agent's 422 (request opened)     p50 ${a.p50.toFixed(1)}  p99 ${a.p99.toFixed(1)}`)
  console.log(`  the owner's webhook receiver         p50 ${d.p50.toFixed(1)}  p99 ${d.p99.toFixed(1)}  max ${Math.max(...delivered).toFixed(1)}`)
  report({ path: "approval request → owner's webhook p50", service: d.p50, baseline: 0, unit: "ms", goal: "(reference)", met: true })
  report({
    path: "approval request → owner's webhook p99",
    service: d.p99,
    baseline: 0,
    unit: "ms",
    goal: "(reference)",
    met: true,
    spread: { median: d.p50, min: Math.min(...delivered), max: Math.max(...delivered) }
  })
} finally {
  await service?.stop()
  await receiver?.close()
  await pg?.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
process.exit(0)
