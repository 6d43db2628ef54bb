/**
 * The chain follower (docs/follower.md): its throughput on a backlog (events/s) and its lag
 * behind the chain at a steady 100 operations/s.
 *
 * A local ERC-4337 network, an external PostgreSQL and the service as a process (like
 * production). ACCOUNTS managed accounts (signed in through the service); their
 * operations are bundled by this script itself (`EntryPoint.handleOps` from a dev account,
 * 25 operations per transaction), i.e. around the relay: every one is news to the follower.
 *
 * 1. Backlog: ROUNDS rounds of one operation per account are mined with the follower off
 *    (`FOLLOWER_INTERVAL=0`), then the service restarts with it on: the time until every
 *    operation is recorded gives events/s.
 * 2. Lag: operations at RATE/s for SECONDS; for each transaction, the time from its receipt
 *    to the moment its record can be read (`chain_inclusions` polled every 10 ms: the
 *    follower's commit, not the row's timestamp).
 *
 *   npx tsx bench/follower.ts            (about a minute; loopback only)
 */
import { Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { Effect, Exit, Scope } from "effect"
import pg from "pg"
import { createPublicClient, createWalletClient, type Hex, http, pad, parseEther } from "viem"
import { entryPoint07Abi, toPackedUserOperation } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../src/chain/Chain.ts"
import { configEnvOf, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { signIn } from "../src/client/signIn.ts"
import { freePort, startPostgres, startProcess } from "./support/processes.ts"
import { report } from "./support/results.ts"

process.env.DO_NOT_TRACK = "1"
const ACCOUNTS = Number(process.env.ACCOUNTS ?? 100)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const RATE = Number(process.env.RATE ?? 100)
const SECONDS = Number(process.env.SECONDS ?? 10)
const PER_TX = 25
/** anvil's dev account #9: not used by the local network. */
const SENDER_KEY: Hex = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6"

const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const chain = viemChainOf(network)
const client = createPublicClient({ chain, transport: http(network.rpcUrl), pollingInterval: 20 })
const sender = createWalletClient({ chain, transport: http(network.rpcUrl), account: privateKeyToAccount(SENDER_KEY) })
const db = await startPostgres()
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`

const env = (follow: boolean) => ({
  DATABASE_URL: db.url,
  PORT: String(port),
  LOG_FORMAT: "json",
  SIWE_DOMAIN: "bench.local",
  SIWE_URI: "http://bench.local",
  RATE_LIMIT_NONCE_PER_MINUTE: "0",
  RATE_LIMIT_SESSION_PER_MINUTE: "0",
  ...configEnvOf(network),
  ANCHOR_INTERVAL: "0 seconds",
  FOLLOWER_INTERVAL: follow ? "100 millis" : "0 seconds"
})

let service = await startProcess("src/main.ts", env(false), `${baseUrl}/health/ready`)
const sql = new pg.Client({ connectionString: db.url })
await sql.connect()

// Managed accounts: each key signs in once (the service stores its account), and the kit derives the same address.
const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, async () => {
  const key = generatePrivateKey()
  const eoa = privateKeyToAccount(key)
  await Effect.runPromise(signIn(baseUrl, eoa))
  const account = await toMetaMaskSmartAccount({
    client: client as never,
    implementation: Implementation.Hybrid,
    deployParams: [eoa.address, [], [], []],
    deploySalt: pad("0x00", { size: 32 }),
    signer: { account: eoa },
    environment: network.delegation as never
  })
  await client.request({ method: "anvil_setBalance" as never, params: [account.address, `0x${parseEther("1").toString(16)}`] as never })
  return { account, nonce: 0n, factory: await account.getFactoryArgs() }
}))

const fees = await client.estimateFeesPerGas()
const target = privateKeyToAccount(generatePrivateKey()).address

/** One operation for each of `batch`, bundled by this script in one transaction; answers the mined time. */
const bundle = async (batch: ReadonlyArray<(typeof accounts)[number]>) => {
  const packed = await Promise.all(batch.map(async (a) => {
    const unsigned = {
      sender: a.account.address,
      nonce: a.nonce,
      ...(a.nonce === 0n ? a.factory : {}),
      callData: await a.account.encodeCalls([{ to: target, data: "0x" }]),
      callGasLimit: 100_000n,
      verificationGasLimit: a.nonce === 0n ? 600_000n : 150_000n,
      preVerificationGas: 60_000n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      signature: "0x" as Hex
    }
    const signature = await a.account.signUserOperation(unsigned as never)
    a.nonce++
    return toPackedUserOperation({ ...unsigned, signature } as never)
  }))
  const hash = await sender.writeContract({ address: network.entryPoint, abi: entryPoint07Abi, functionName: "handleOps", args: [packed, sender.account.address] })
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== "success") throw new Error(`handleOps ${hash} reverted`)
  return { hash, minedAt: Date.now() }
}

const chunks = <A>(xs: ReadonlyArray<A>, n: number) => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n))
const recorded = async () => Number((await sql.query("SELECT count(*)::int AS n FROM chain_inclusions")).rows[0].n)

try {
  // 1. Backlog.
  const startBlock = await client.getBlockNumber()
  for (let r = 0; r < ROUNDS; r++) for (const batch of chunks(accounts, PER_TX)) await bundle(batch)
  const backlog = ACCOUNTS * ROUNDS
  await service.stop()
  service = await startProcess("src/main.ts", { ...env(true), FOLLOWER_START_BLOCK: String(startBlock + 1n) }, `${baseUrl}/health/ready`)
  const t0 = Date.now()
  while ((await recorded()) < backlog) {
    if (Date.now() - t0 > 300_000) throw new Error(`backlog: ${await recorded()} of ${backlog} after 300 s`)
    await new Promise((r) => setTimeout(r, 50))
  }
  const backlogSeconds = (Date.now() - t0) / 1000
  const throughput = backlog / backlogSeconds
  console.log(`Follower backlog: ${backlog} operations (${ROUNDS} rounds × ${ACCOUNTS} accounts, ${PER_TX} per bundle) recorded in ${backlogSeconds.toFixed(1)} s: ${throughput.toFixed(0)} events/s`)

  // 2. Lag at RATE operations/s: from a bundle's receipt to the moment its record can be read
  // (polled every 10 ms from outside: when the follower's transaction committed, whatever the
  // row's own timestamp says).
  const seenAt = new Map<string, number>()
  let watching = true
  const watch = (async () => {
    while (watching) {
      const rows = await sql.query("SELECT DISTINCT tx_hash FROM chain_inclusions")
      const now = Date.now()
      for (const r of rows.rows as Array<{ tx_hash: string }>) if (!seenAt.has(r.tx_hash)) seenAt.set(r.tx_hash, now)
      await new Promise((r) => setTimeout(r, 10))
    }
  })()
  const lags: Array<number> = []
  const txs: Array<{ hash: string; minedAt: number }> = []
  const perTick = Math.max(1, Math.round(RATE / (1000 / 250)))
  let cursor = 0
  const start = Date.now()
  while (Date.now() - start < SECONDS * 1000) {
    const tickStart = Date.now()
    const batch = Array.from({ length: perTick }, () => accounts[cursor++ % accounts.length]!)
    for (const part of chunks(batch, PER_TX)) txs.push(await bundle(part))
    const spent = Date.now() - tickStart
    if (spent < 250) await new Promise((r) => setTimeout(r, 250 - spent))
  }
  const achieved = (txs.length * perTick) / ((Date.now() - start) / 1000)
  for (const tx of txs) {
    for (let i = 0; i < 400 && !seenAt.has(tx.hash.toLowerCase()); i++) await new Promise((r) => setTimeout(r, 50))
    const at = seenAt.get(tx.hash.toLowerCase())
    if (at !== undefined) lags.push(at - tx.minedAt)
  }
  watching = false
  await watch
  const sorted = [...lags].sort((a, b) => a - b)
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
  console.log(`Follower lag at ${achieved.toFixed(0)} operations/s for ${SECONDS} s (${txs.length} bundles): p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${sorted.at(-1)} ms (FOLLOWER_INTERVAL 100 ms)`)
  report({ path: "follower backlog throughput", service: throughput, baseline: RATE, unit: "req/s", goal: `≥ ${RATE} events/s`, met: throughput >= RATE })
  report({ path: "follower lag p95 at 100 ops/s", service: q(0.95) / 1000, baseline: 2, unit: "s", goal: "≤ 2 s", met: q(0.95) <= 2000 })
} finally {
  await sql.end()
  await service.stop()
  await db.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
