/**
 * The approval path (issue 25), end to end through a served process on the local chain:
 *   request:  the agent's action above the threshold → 422 `approval_required` (a pending request);
 *   webhook:  from the request to the approver's signed webhook on a loopback receiver (the owner's
 *             approver contact: the notifications outbox and delivery worker);
 *   approve:  the approver's signature submitted → `approved`;
 *   executed: the agent's build (approvals attached), signed, relayed, until the relay reports it mined.
 * Each round a fresh recipient (a new request). Prints p50/p99 of each step and of the whole.
 *
 *   npx tsx bench/approvals.ts                 (ROUNDS=20 by default; loopback only)
 */
import { Effect, Scope } from "effect"
import { createPublicClient, createWalletClient, encodeFunctionData, type Hex, http, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Redacted } from "effect"
import { permitStablecoinAbi as testStablecoinAbi } from "../src/chain/contracts/TokenPaymaster.ts"
import { configEnvOf, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { makeClient } from "../src/client/Client.ts"
import { signIn } from "../src/client/signIn.ts"
import type { Eip712TypedData } from "../src/domain/Operations.ts"
import { startReceiver } from "../test/notifications/webhooks/Receiver.ts"
import { freePort, startPostgres, startProcess } from "./support/processes.ts"
import { report, spread } from "./support/results.ts"

process.env.DO_NOT_TRACK = "1"
const rounds = Math.min(200, Number(process.env.ROUNDS ?? 20))

const scope = Effect.runSync(Scope.make())
const local = await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope)))
const network = toJson(local)
const pg = await startPostgres()
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`
const receiver = await startReceiver()
const service = await startProcess(
  "src/main.ts",
  {
    DATABASE_URL: pg.url,
    PORT: String(port),
    LOG_FORMAT: "json",
    SIWE_DOMAIN: "bench.local",
    SIWE_URI: "http://bench.local",
    RATE_LIMIT_NONCE_PER_MINUTE: "0",
    RATE_LIMIT_SESSION_PER_MINUTE: "0",
    RATE_LIMIT_BUILDS_PER_MINUTE: "0",
    SPONSOR_QUOTA_OPS: "0",
    SPONSOR_QUOTA_GAS: "0",
    WEBHOOKS_ALLOW_LOOPBACK: "true",
    WEBHOOKS_POLL_INTERVAL: "20 millis",
    ...configEnvOf(network)
  },
  `${baseUrl}/health/ready`
)

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}
const sign = (key: Hex, typedData: unknown) => privateKeyToAccount(key).signTypedData(typedData as Eip712TypedData as never)
const user = async () => {
  const key = generatePrivateKey()
  const session = await Effect.runPromise(signIn(baseUrl, privateKeyToAccount(key)))
  return { key, api: await Effect.runPromise(makeClient({ baseUrl, token: session.token })) }
}
const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e)

try {
  const [owner, agent] = [await user(), await user()]
  const approverKey = generatePrivateKey()
  const approver = privateKeyToAccount(approverKey).address.toLowerCase()
  const ownerAccount = (await run(owner.api.accounts.listAccounts()))[0]!.address
  const agentAccount = (await run(agent.api.accounts.listAccounts()))[0]!.address
  // Funds for the grant: the deployer mints the owner's account (the node picks the nonce).
  const deployer = privateKeyToAccount(Redacted.value(local.deployerKey)).address
  const chain = { id: network.chainId, name: "local", nativeCurrency: { name: "ETH", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [network.rpcUrl] } } }
  const hash = await createWalletClient({ chain, transport: http(network.rpcUrl) }).request({
    method: "eth_sendTransaction",
    params: [{ from: deployer, to: network.tokens.usd.address, data: encodeFunctionData({ abi: testStablecoinAbi, functionName: "mint", args: [ownerAccount as Hex, parseUnits("10000", 6)] }) }]
  })
  await createPublicClient({ chain, transport: http(network.rpcUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 })

  const build = await run(owner.api.delegations.build({
    payload: {
      name: "bench", kind: "agent", delegateeAddress: agentAccount, chainId: network.chainId,
      budgets: [{ token: { symbol: "USDC" }, amount: 5000 }], perActionMax: { token: { symbol: "USDC" }, amount: 100 }, maxActions: 1000,
      approval: { required: 1, approvers: [approver], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] }
    }
  }))
  const leg = build.delegations[0]!
  const legSignature = await privateKeyToAccount(owner.key).signTypedData({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } } as never)
  const grant = await run(owner.api.delegations.create({
    payload: {
      userOp: { ...build.enableUserOp, signature: await sign(owner.key, build.typedData) },
      userOpHash: build.userOpHash,
      intentType: "delegation_enable",
      delegationSignatures: [{ permissionId: leg.permissionId, signature: legSignature }]
    }
  }))
  await run(owner.api.approvals.addContact({ payload: { approver, url: receiver.url } }))

  const webhookMs: Array<number> = [], requestMs: Array<number> = [], approveMs: Array<number> = [], executedMs: Array<number> = [], wholeMs: Array<number> = []
  for (let i = 0; i < rounds; i++) {
    const recipient = privateKeyToAccount(generatePrivateKey()).address
    const t0 = performance.now()
    const held = await run(Effect.flip(agent.api.delegations.act({ params: { delegationId: grant.id }, payload: { recipient, amount: 2 } })))
    const t1 = performance.now()
    const id = (held as unknown as { details: { approvalId: string } }).details.approvalId
    await receiver.waitFor(() => receiver.received.some((r) => r.body.includes(id) && r.body.includes("Approval needed")), 30_000)
    const heard = receiver.received.find((r) => r.body.includes(id) && r.body.includes("Approval needed"))!
    const request = await run(owner.api.approvals.get({ params: { approvalId: id } }))
    const t2 = performance.now()
    const signature = await sign(approverKey, {
      ...request.toSign,
      message: { ...request.toSign.message, value: BigInt(request.toSign.message.value), nonce: BigInt(request.toSign.message.nonce), deadline: BigInt(request.toSign.message.deadline) }
    })
    await run(owner.api.approvals.approve({ params: { approvalId: id }, payload: { signature, approver } }))
    const t3 = performance.now()
    const op = await run(agent.api.approvals.build({ params: { approvalId: id } }))
    let receipt = await run(agent.api.userops.submit({ payload: { ...op.userOp, signature: await sign(agent.key, op.typedData) } }))
    while (receipt.status === "submitted") {
      await new Promise((r) => setTimeout(r, 50))
      receipt = await run(agent.api.userops.get({ params: { userOpId: receipt.userOpId } }))
    }
    if (receipt.outcome !== "mined") throw new Error(`round ${i}: ${receipt.outcome} ${receipt.reason ?? ""}`)
    const t4 = performance.now()
    requestMs.push(t1 - t0)
    webhookMs.push(heard.at - t0)
    approveMs.push(t3 - t2)
    executedMs.push(t4 - t3)
    wholeMs.push(t4 - t0 - (t2 - t1))
  }
  const row = (name: string, xs: ReadonlyArray<number>) =>
    `${name.padEnd(44)} p50 ${quantile(xs, 0.5).toFixed(1).padStart(8)} ms   p99 ${quantile(xs, 0.99).toFixed(1).padStart(8)} ms`
  console.log(`Approval path: ${rounds} requests, 1 of 1 approver, loopback, one served process, local chain`)
  console.log(row("request (act → 422 approval_required)", requestMs))
  console.log(row("request → approver's webhook received", webhookMs))
  console.log(row("approve (signature → approved)", approveMs))
  console.log(row("build + sign + relay → mined", executedMs))
  console.log(row("whole path (less the approver's own time)", wholeMs))
  report({ path: "approval request → approver's webhook p50", service: quantile(webhookMs, 0.5), baseline: 0, unit: "ms", goal: "(reference)", met: true, spread: spread(webhookMs) })
  report({ path: "approval request → executed p50", service: quantile(wholeMs, 0.5), baseline: 0, unit: "ms", goal: "(reference)", met: true, spread: spread(wholeMs) })
} finally {
  await service.stop()
  await receiver.close()
  await pg.stop()
  await Effect.runPromise(Scope.close(scope, { _tag: "Success", value: undefined } as never))
}
