/**
 * Receipts pushed (issue 30, items 1 and 2): how long after `POST /userops` a wallet learns the
 * operation's outcome, and how long after it executed the owner's webhook hears of it, with the
 * service in its DEFAULT configuration (only what a loopback run needs is set: sign-in limits and
 * sponsorship quotas off, webhooks allowed to a loopback receiver).
 *
 * For each operation (a sponsored freeze of a fresh account, built by the service and signed with
 * viem), from just before `POST /userops`, at once and for the same operation:
 * - through the service: the typed client's `pollUserOp` (`GET /userops/{id}?wait=…`) until the
 *   terminal receipt;
 * - the baseline: the bundler's own `eth_getUserOperationReceipt`, polled every 10 ms;
 * - the owner's webhook (registered before the operation) on a real loopback receiver.
 * The goal's figures: the service's p50 minus the bundler's p50 (≤ +20 ms), and the webhook's
 * arrival after the bundler's receipt was first seen ("executed on chain", p50 ≤ 500 ms).
 *
 *   npx tsx bench/receipts.ts                       (about 40 s; loopback only)
 *   ITERATIONS=60 WARMUP=5 npx tsx bench/receipts.ts
 */
import { Effect, Exit, Scope } from "effect"
import * as os from "node:os"
import pgLib from "pg"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { makeClient } from "../src/client/Client.ts"
import { pollUserOp } from "../src/client/poll.ts"
import { signIn } from "../src/client/signIn.ts"
import type { Eip712TypedData, UserOperation } from "../src/domain/Operations.ts"
import { startReceiver } from "../test/notifications/webhooks/Receiver.ts"
import { freePort, serviceEnv, startPostgres, startProcess } from "./support/processes.ts"
import { report, spread } from "./support/results.ts"

process.env.DO_NOT_TRACK = "1"
const iterations = Math.min(200, Number(process.env.ITERATIONS ?? 30))
const warmup = Number(process.env.WARMUP ?? 5)

const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const pg = await startPostgres()
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const receiver = await startReceiver()

const service = await startProcess(
  "src/main.ts",
  // The receiver listens on loopback, which the URL guard refuses by default.
  serviceEnv({ databaseUrl: pg.url, port, networks: network }, {
    WEBHOOKS_ALLOW_LOOPBACK: "true",
    // A tuned run (reported beside the default): `USEROPS_WATCH_INTERVAL="5 millis" npx tsx bench/receipts.ts`.
    ...(process.env.USEROPS_WATCH_INTERVAL === undefined ? {} : { USEROPS_WATCH_INTERVAL: process.env.USEROPS_WATCH_INTERVAL })
  }),
  `${baseUrl}/health/ready`
)

const receiverBase = receiver.url.replace(/\/hook$/, "")

/** A freeze operation of a fresh account, its owner's webhook registered, signed. */
const prepare = (i: number) =>
  Effect.runPromise(Effect.gen(function*() {
    const key = generatePrivateKey()
    const session = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* makeClient({ baseUrl, token: session.token })
    yield* api.notifications.createWebhook({ payload: { url: `${receiverBase}/op/${i}` } })
    const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
    const signature = yield* Effect.promise(() =>
      privateKeyToAccount(key).signTypedData(build.typedData as Eip712TypedData as never)
    )
    return { api, op: { ...build.userOp, signature } as UserOperation }
  }))

const bundlerReceipt = async (hash: string, deadline: number): Promise<number> => {
  while (performance.now() < deadline) {
    const res = await fetch(network.bundlerUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getUserOperationReceipt", params: [hash] })
    })
    const body = (await res.json()) as { result?: unknown }
    if (body.result !== null && body.result !== undefined) return performance.now()
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`no bundler receipt for ${hash}`)
}

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}

// Where the difference goes: the settlement's commit, heard on the channel the service's own
// waiters listen on (migration 0340), by a connection of the benchmark's.
const listener = new pgLib.Client({ connectionString: pg.url })
await listener.connect()
await listener.query("LISTEN das_userops")
const committedAt = new Map<string, number>()
listener.on("notification", (n) => {
  if (n.payload !== undefined && !committedAt.has(n.payload)) committedAt.set(n.payload, performance.now())
})

try {
  // Every webhook delivery as it arrives (operations go one at a time, each from a fresh owner
  // with an endpoint of its own, so the next "Action executed" after a submit is its own).
  const arrivals: Array<{ body: string; at: number }> = []
  receiver.onRequest = (r) => arrivals.push({ body: r.body, at: r.at })

  const serviceMs: Array<number> = []
  const bundlerMs: Array<number> = []
  const hookAfterChainMs: Array<number> = []
  const hookMs: Array<number> = []
  const committedMs: Array<number> = []
  const chainToCommitMs: Array<number> = []
  const commitToClientMs: Array<number> = []
  const loads: Array<number> = []
  for (let i = 1 - warmup; i <= iterations; i++) {
    const { api, op } = await prepare(i + warmup)
    const seenBefore = arrivals.length
    const t0 = performance.now()
    const submitted = await Effect.runPromise(api.userops.submit({ payload: op }))
    if (submitted.status === "failed") throw new Error(`relay: ${submitted.reason}`)
    const [serviceAt, bundlerAt] = await Promise.all([
      Effect.runPromise(pollUserOp(api, submitted.userOpId)).then((receipt) => {
        if (receipt.status !== "included") throw new Error(`not included: ${receipt.status} ${receipt.reason ?? ""}`)
        return performance.now()
      }),
      bundlerReceipt(submitted.userOpHash, t0 + 30_000)
    ])
    // The webhook: a delivery carrying this operation's "Action executed" notification.
    const hook = await receiver.waitFor(() => arrivals.slice(seenBefore).some((a) => a.body.includes("Action executed")), 10_000)
      .then(() => arrivals.slice(seenBefore).find((a) => a.body.includes("Action executed"))!.at)
    if (i > 0) {
      serviceMs.push(serviceAt - t0)
      bundlerMs.push(bundlerAt - t0)
      hookMs.push(hook - t0)
      hookAfterChainMs.push(hook - bundlerAt)
      const committed = committedAt.get(submitted.userOpId)
      if (committed !== undefined) {
        committedMs.push(committed - t0)
        chainToCommitMs.push(committed - bundlerAt)
        commitToClientMs.push(serviceAt - committed)
      }
      loads.push(os.loadavg()[0]!)
    }
  }

  const row = (name: string, xs: ReadonlyArray<number>) =>
    `${name.padEnd(52)} p50 ${quantile(xs, 0.5).toFixed(1).padStart(7)} ms   p90 ${quantile(xs, 0.9).toFixed(1).padStart(7)} ms   p99 ${quantile(xs, 0.99).toFixed(1).padStart(7)} ms`
  console.log(`Receipts: ${iterations} sponsored freezes, one at a time, ${process.env.USEROPS_WATCH_INTERVAL === undefined ? "default config" : `USEROPS_WATCH_INTERVAL=${process.env.USEROPS_WATCH_INTERVAL}`}; load average ${spread(loads).min.toFixed(1)}–${spread(loads).max.toFixed(1)}`)
  console.log(row("POST → terminal receipt, service (pollUserOp ?wait)", serviceMs))
  console.log(row("POST → bundler's receipt (polled every 10 ms)", bundlerMs))
  console.log(row("POST → settlement committed (heard on das_userops)", committedMs))
  console.log(row("bundler's receipt seen → settlement committed", chainToCommitMs))
  console.log(row("settlement committed → client has the receipt", commitToClientMs))
  console.log(row("POST → owner's webhook", hookMs))
  console.log(row("bundler's receipt seen → owner's webhook", hookAfterChainMs))
  const diffs = serviceMs.map((s, k) => s - bundlerMs[k]!)
  console.log(row("service − bundler, per operation", diffs))
  const service50 = quantile(serviceMs, 0.5)
  const bundler50 = quantile(bundlerMs, 0.5)
  console.log(`difference (p50): ${(service50 - bundler50).toFixed(1)} ms  goal ≤ +20 ms`)
  // Spread: the p50 difference within each third of the run.
  const third = Math.max(1, Math.floor(serviceMs.length / 3))
  const slice = (xs: ReadonlyArray<number>, k: number) => xs.slice(k * third, k === 2 ? xs.length : (k + 1) * third)
  const thirds = [0, 1, 2].map((k) => quantile(slice(serviceMs, k), 0.5) - quantile(slice(bundlerMs, k), 0.5))
  console.log(`difference (p50) per third: ${thirds.map((d) => d.toFixed(1)).join(", ")} ms`)
  report({
    path: "POST /userops → terminal receipt p50 (service over bundler's receipt)",
    service: service50,
    baseline: bundler50,
    unit: "ms",
    goal: "≤ +20 ms",
    met: service50 - bundler50 <= 20,
    spread: spread(thirds)
  })
  const hook50 = quantile(hookAfterChainMs, 0.5)
  report({
    path: "executed on chain (bundler's receipt) → owner's webhook p50",
    service: hook50,
    baseline: 0,
    unit: "ms",
    goal: "≤ 500 ms",
    met: hook50 <= 500,
    spread: spread([0, 1, 2].map((k) => quantile(slice(hookAfterChainMs, k), 0.5)))
  })
} finally {
  await listener.end()
  await receiver.close()
  await service.stop()
  await pg.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
