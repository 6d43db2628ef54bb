/**
 * Several chains (issue 29's measures):
 *
 * 1. Start-up: one local ERC-4337 network (anvil, contracts, Alto) alone, then the default two
 *    started together (`LocalNetwork.startAll`, as `npm start` does), and the service process on
 *    the two from spawn to ready (its database already running).
 * 2. Per-chain throughput: WORKERS concurrent owners each build, sign and relay a sponsored
 *    freeze of a fresh account (sign-in done beforehand) for SECONDS, on chain A alone, then on
 *    A and B at once (WORKERS each). Both chains share the service process and its database:
 *    what is left of A's rate when B is loaded as well is the interference.
 *
 *   npx tsx bench/chains.ts            (about 2 minutes; loopback only)
 *   WORKERS=4 SECONDS=15 npx tsx bench/chains.ts
 */
import { Effect, Scope } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { configEnvOf, make as startLocalNetwork, startAll, toJson } from "../src/chain/LocalNetwork.ts"
import { makeClient } from "../src/client/Client.ts"
import { signIn } from "../src/client/signIn.ts"
import type { Eip712TypedData, UserOperation } from "../src/domain/Operations.ts"
import { freePort, startPostgres, startProcess } from "./support/processes.ts"
import { report } from "./support/results.ts"

process.env.DO_NOT_TRACK = "1"
const workers = Number(process.env.WORKERS ?? 4)
const seconds = Number(process.env.SECONDS ?? 15)
const A = 31337
const B = 31338

const timed = async <T>(f: () => Promise<T>) => {
  const start = performance.now()
  const value = await f()
  return { value, ms: performance.now() - start }
}

// 1. Start-up.
const one = await timed(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(startLocalNetwork({ chainId: 31_400 }).pipe(Scope.provide(scope)))
  return scope
})
const two = await timed(async () => {
  const scope = Effect.runSync(Scope.make())
  const nets = await Effect.runPromise(startAll([A, B]).pipe(Scope.provide(scope)))
  return nets.map(toJson)
})
const networks = two.value
const pg = await startPostgres()
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const service = await timed(() =>
  startProcess(
    "src/main.ts",
    {
      DATABASE_URL: pg.url,
      PORT: String(port),
      LOG_FORMAT: "json",
      LOG_LEVEL: "Warning",
      SIWE_DOMAIN: "bench.local",
      SIWE_URI: "http://bench.local",
      RATE_LIMIT_NONCE_PER_MINUTE: "0",
      RATE_LIMIT_SESSION_PER_MINUTE: "0",
      RATE_LIMIT_BUILDS_PER_MINUTE: "0",
      SPONSOR_QUOTA_OPS: "0",
      SPONSOR_QUOTA_GAS: "0",
      SPONSOR_ADDRESS_QUOTA_OPS: "0",
      SPONSOR_ADDRESS_QUOTA_GAS: "0",
      SPONSOR_BUDGET_OPS: "0",
      SPONSOR_BUDGET_GAS: "0",
      ANCHOR_INTERVAL: "0 seconds",
      ...configEnvOf(networks)
    },
    `${baseUrl}/health/ready`
  )
)
console.log(`start-up: one local network ${(one.ms / 1000).toFixed(1)} s; two together ${(two.ms / 1000).toFixed(1)} s; ` +
  `the service on both, spawn → ready ${(service.ms / 1000).toFixed(1)} s`)

// 2. Throughput.
const session = async () => {
  const key = generatePrivateKey()
  const s = await Effect.runPromise(signIn(baseUrl, privateKeyToAccount(key)))
  return { key, api: await Effect.runPromise(makeClient({ baseUrl, token: s.token })) }
}

/** One cycle: a fresh account's freeze on `chainId`, built, signed, relayed (202 or 200). */
const cycle = async (chainId: number) => {
  const { key, api } = await session()
  const build = await Effect.runPromise(api.accounts.buildRules({ payload: { intentType: "account_freeze", chainId } }))
  const signature = await privateKeyToAccount(key).signTypedData(build.typedData as Eip712TypedData as never)
  await Effect.runPromise(api.userops.submit({ payload: { ...build.userOp, signature } as UserOperation }))
}

/** Cycles per second on each of `chains`, WORKERS loops per chain for SECONDS. */
const load = async (chains: ReadonlyArray<number>) => {
  const until = performance.now() + seconds * 1000
  const done = new Map<number, number>(chains.map((c) => [c, 0]))
  const latencies = new Map<number, Array<number>>(chains.map((c) => [c, []]))
  await Promise.all(chains.flatMap((chainId) =>
    Array.from({ length: workers }, async () => {
      while (performance.now() < until) {
        const { ms } = await timed(() => cycle(chainId))
        done.set(chainId, done.get(chainId)! + 1)
        latencies.get(chainId)!.push(ms)
      }
    })
  ))
  return new Map(chains.map((c) => {
    const xs = [...latencies.get(c)!].sort((a, b) => a - b)
    return [c, { perSecond: done.get(c)! / seconds, p50: xs[Math.floor(xs.length / 2)] ?? 0 }]
  }))
}

try {
  await load([A]) // warm-up
  const alone = (await load([A])).get(A)!
  const together = await load([A, B])
  const a = together.get(A)!
  const b = together.get(B)!
  console.log(`chain A alone: ${alone.perSecond.toFixed(1)} cycles/s (p50 ${alone.p50.toFixed(0)} ms)`)
  console.log(`both loaded:   A ${a.perSecond.toFixed(1)} cycles/s (p50 ${a.p50.toFixed(0)} ms), B ${b.perSecond.toFixed(1)} cycles/s ` +
    `(p50 ${b.p50.toFixed(0)} ms); A keeps ${(100 * a.perSecond / alone.perSecond).toFixed(0)} % of its rate alone`)
  report({
    path: "two local chains started together vs one (s)",
    service: two.ms / 1000,
    baseline: one.ms / 1000,
    unit: "s",
    goal: "≤ 1.5× one chain",
    met: two.ms <= 1.5 * one.ms
  })
  report({
    path: "chain A's relay cycles with chain B loaded too vs alone",
    service: a.perSecond / alone.perSecond,
    baseline: 1,
    unit: "ratio",
    goal: "≥ 0.8× (only the process and database are shared)",
    met: a.perSecond >= 0.8 * alone.perSecond
  })
} finally {
  await service.value.stop()
  await pg.stop()
  process.exit(0)
}
