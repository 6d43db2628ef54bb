/**
 * Micropayments in a channel under a grant (issue 46 item 5): an agent pays a loopback merchant
 * per request with cumulative vouchers (EIP-712, signed by the agent's key) that the merchant
 * checks in memory; after PAYMENTS payments the merchant settles the highest voucher in one
 * `redeemDelegations` on the local chain. Reports, per payment after the first (which opens
 * the channel and is checked against the chain): p50 and p99 of the agent's sign + the HTTP
 * round trip + the merchant's check, beside the same round trip unpaid (a 402, no voucher) in
 * the same run; and the one settlement (its time, its transfer = the sum).
 *
 *   npm run bench -- x402-channel            (about 30 s on a quiet machine; loopback only)
 *   PAYMENTS=1000 npm run bench -- x402-channel
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import { decodeEventLog, erc20Abi, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { VOUCHER_HEADER } from "@das/x402-erc7710"
import { make as startLocalNetwork } from "../src/chain/LocalNetwork.ts"
import { localChannel } from "../src/payments/x402/Channel.ts"
import { deployVoucherEnforcer, startChannelServer } from "../src/payments/x402/world/ChannelServer.ts"
import { localParties } from "../src/payments/x402/world/LocalParties.ts"
import { percentile, report } from "./support/results.ts"

const payments = Math.max(10, Number(process.env.PAYMENTS ?? 1_000))
const price = 1_000n // 0.001 USDC

const scope = Effect.runSync(Scope.make())
const network = await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope)))
const keys = { ...network, deployer: privateKeyToAccount(Redacted.value(network.deployerKey)).address }
const parties = localParties(keys)
const usdc = network.tokens.usd.address
const enforcer = await deployVoucherEnforcer(keys, await parties.fundedKey())
const payTo = privateKeyToAccount(generatePrivateKey()).address
const checks: Array<number> = []
const server = await startChannelServer({ network: keys, enforcer, key: await parties.fundedKey(), token: usdc, payTo, price, onCheck: (ms) => checks.push(ms) })

const owner = await parties.makeOwner(1_000)
const agent = privateKeyToAccount(generatePrivateKey())
const sum = price * BigInt(payments)
const usd = Number(sum) / 1e6
const grant = await parties.signGrant(owner, agent.address, { recipients: [payTo], budget: usd + 1, perAction: usd + 1 })
const channel = await localChannel(grant, agent, {
  enforcer,
  merchant: server.merchant.merchant,
  token: usdc,
  payTo,
  cap: sum + parseUnits("1", 6),
  validBefore: Math.floor(Date.now() / 1000) + 3_600
})
const url = `${server.url}/item`

// The floor: the same round trip unpaid (the merchant answers 402 without a voucher to check).
const floor: Array<number> = []
for (let i = 0; i < Math.min(payments, 500); i++) {
  const t = performance.now()
  const res = await fetch(url)
  await res.arrayBuffer()
  floor.push(performance.now() - t)
}

const pay = async () => {
  const t = performance.now()
  const header = await channel.payer.pay(price)
  const signed = performance.now()
  const res = await fetch(url, { headers: { [VOUCHER_HEADER]: header } })
  const body = await res.json() as { error?: string }
  if (res.status !== 200) throw new Error(`payment refused: ${res.status} ${body.error}`)
  const done = performance.now()
  return { total: done - t, sign: signed - t, http: done - signed }
}

const first = await pay()
checks.length = 0
const totals: Array<number> = []
const signs: Array<number> = []
const https: Array<number> = []
for (let i = 1; i < payments; i++) {
  const { total, sign, http } = await pay()
  totals.push(total)
  signs.push(sign)
  https.push(http)
}

// The same paid round trip refused before any signature check (a replayed voucher): the HTTP part alone.
const replayed = await channel.payer.pay(price)
await fetch(url, { headers: { [VOUCHER_HEADER]: replayed } }).then((r) => r.arrayBuffer())
const replays: Array<number> = []
for (let i = 0; i < Math.min(payments, 300); i++) {
  const t0 = performance.now()
  const res = await fetch(url, { headers: { [VOUCHER_HEADER]: replayed } })
  await res.arrayBuffer()
  replays.push(performance.now() - t0)
}
console.log(`replayed voucher round trip p50 ${percentile(replays, 0.5).toFixed(2)} ms`)

const t = performance.now()
const settled = await server.merchant.settle(channel.payer.channel)
const settleMs = performance.now() - t
const transfers = settled.ok
  ? settled.receipt.logs.filter((l) => l.address.toLowerCase() === usdc.toLowerCase()).map((l) => decodeEventLog({ abi: erc20Abi, ...l }))
  : []
// The replay measure's voucher was paid once (its first use) before its replays were refused.
const owed = sum + price
const exact = settled.ok && settled.amount === owed && transfers.length === 1 && transfers[0]!.args.value === owed

const p50 = percentile(totals, 0.5)
const p99 = percentile(totals, 0.99)
console.log(JSON.stringify({
  payments,
  firstMs: first.total,
  perPayment: { p50, p99, max: Math.max(...totals) },
  agentSign: { p50: percentile(signs, 0.5), p99: percentile(signs, 0.99) },
  paidRoundTrip: { p50: percentile(https, 0.5), p99: percentile(https, 0.99) },
  merchantCheck: { p50: percentile(checks, 0.5), p99: percentile(checks, 0.99) },
  unpaidRoundTrip: { p50: percentile(floor, 0.5), p99: percentile(floor, 0.99) },
  settlement: settled.ok ? { transaction: settled.transaction, amount: settled.amount.toString(), ms: settleMs, gasUsed: settled.receipt.gasUsed.toString() } : settled
}))
console.log(
  `${payments} payments: first ${first.total.toFixed(1)} ms (opens the channel); after it p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms ` +
    `(agent's signing p50 ${percentile(signs, 0.5).toFixed(2)} ms; merchant's check p50 ${percentile(checks, 0.5).toFixed(2)} ms; paid round trip p50 ${percentile(https, 0.5).toFixed(2)} ms; unpaid round trip p50 ${percentile(floor, 0.5).toFixed(2)} ms); ` +
    `one settlement: ${settled.ok ? `${settled.amount} moved in ${settleMs.toFixed(0)} ms, gas ${settled.receipt.gasUsed}` : settled.reason}`
)
const spreadOf = (values: ReadonlyArray<number>) => ({ median: percentile(values, 0.5), min: Math.min(...values), max: Math.max(...values) })
report({ path: "channel payment after the first, p50 (sign + HTTP + check)", service: p50, baseline: percentile(floor, 0.5), unit: "ms", goal: "≤ 5 ms", met: p50 <= 5, spread: spreadOf(totals) })
report({ path: "channel payment after the first, p99", service: p99, baseline: percentile(floor, 0.99), unit: "ms", goal: "(reported)", met: true })
report({ path: `${payments + 1} payments settled in one transaction`, service: settleMs, baseline: 0, unit: "ms", goal: "1 tx, exactly the sum", met: exact })

await server.close()
await Effect.runPromise(Scope.close(scope, Exit.void))
process.exit(0)
