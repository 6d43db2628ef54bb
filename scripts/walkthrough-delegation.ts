/**
 * The delegation walkthrough, end to end against a running service on the local network, with two
 * keys: the owner grants an agent a weekly USDC budget with a per-action maximum, an allowlist and
 * its own approval above 15 USDC; the agent acts with its own session; an action above 15 waits for
 * the owner's signed approval, then executes; an action above the maximum is declined with its
 * reason; the owner reads its activity and the entry's proof (checked against the anchor); the agent
 * pays an x402 resource (a resource server and facilitator started here, on loopback) under a second
 * grant; the owner revokes and the agent's next action is refused. Each step prints what it did and
 * the grant's `spentToDate`.
 *
 *   npm start                              # in one terminal (the local chain starts with it)
 *   npm run walkthrough:delegation         # in another (BASE_URL, OWNER_KEY, AGENT_KEY, RPC_URL may be set)
 */
import type { Address, Hex, LocalAccount } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { checkProofOffline, verifyProofOnChain } from "../src/anchor/ProofVerify.ts"
import type { AuditProof } from "../src/audit/Domain.ts"
import { signInMessage } from "../src/client/signIn.ts"
import { payingFetch, serviceAuthorizer, settlementOf } from "@das/x402-erc7710"
import { startFacilitator } from "../src/payments/x402/world/FacilitatorService.ts"
import { localParties } from "../src/payments/x402/world/LocalParties.ts"
import { startResourceServer } from "../src/payments/x402/world/ResourceServer.ts"

export interface WalkthroughOptions {
  readonly baseUrl: string
  readonly owner: LocalAccount
  readonly agent: LocalAccount
  /** Verify the proof's anchor transaction too (the chain's JSON-RPC). */
  readonly rpcUrl?: string
  /** How long to wait for the anchor that covers the agent's action (the service anchors every ANCHOR_INTERVAL, 60 s by default). */
  readonly anchorWaitMs?: number
  readonly log: (line: string) => void
}

class ApiError extends Error {
  constructor(readonly status: number, readonly body: any) {
    super(`${status} ${JSON.stringify(body)}`)
  }
}

type Call = (method: string, path: string, token: string | undefined, body?: unknown) => Promise<any>

/**
 * An x402 resource server and facilitator (the x402 packages, on loopback) on the service's local network
 * (`GET /dev/networks`); the owner grants the agent's key 1 USDC, at most 0.05 a payment, the facilitator
 * its only redeemer; the agent pays GET /report (0.01 USDC) asking the service what to sign; the
 * settlement as the chain follower recorded it.
 */
const payPerRequest = async (
  o: WalkthroughOptions,
  call: Call,
  owner: { token: string; accounts: ReadonlyArray<{ address: string; chainId: number }> },
  agent: { token: string },
  say: (text: string) => void,
  spent: (token: string, id: string) => Promise<any>
) => {
  const ownerAccount = owner.accounts[0]!
  const networks: ReadonlyArray<any> = await call("GET", "/dev/networks", owner.token)
  const network = networks.find((n) => n.chainId === ownerAccount.chainId)
  // The facilitator settles from a fresh key given test ETH (anvil_setBalance: local networks only).
  const parties = localParties({ ...network, deployer: "0x0000000000000000000000000000000000000000" })
  const facilitator = await startFacilitator({ network, key: await parties.fundedKey(), pollingIntervalMs: 100 })
  const merchant = privateKeyToAccount(generatePrivateKey()).address
  const usd = network.tokens.usd
  const resource = await startResourceServer({
    facilitatorUrl: facilitator.url,
    chainId: network.chainId,
    asset: { address: usd.address, decimals: usd.decimals, symbol: usd.symbol },
    payTo: merchant,
    price: 10_000n,
    meteredMax: 1_000_000n,
    unitPrice: 50_000n
  })
  try {
    say(`resource server ${resource.url} (GET /report: 0.01 USDC to ${merchant}); facilitator ${facilitator.url} settling from ${facilitator.address}`)
    const build = await call("POST", "/delegations/build", owner.token, {
      name: "Research agent (x402)",
      kind: "agent",
      delegateeAddress: o.agent.address,
      chainId: network.chainId,
      budgets: [{ token: { symbol: "USDC" }, amount: 1 }],
      perActionMax: { token: { symbol: "USDC" }, amount: 0.05 },
      maxActions: 100,
      redeemers: { mode: "named", addresses: [facilitator.address] }
    })
    say(build.humanSummary)
    const leg = build.delegations[0]
    const x402Grant = await call("POST", "/delegations", owner.token, {
      userOp: { ...build.enableUserOp, signature: await o.owner.signTypedData!(build.typedData) },
      userOpHash: build.userOpHash,
      intentType: "delegation_enable",
      delegationSignatures: [{
        permissionId: leg.permissionId,
        signature: await o.owner.signTypedData!({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
      }]
    })
    say(`delegation ${x402Grant.id}: ${x402Grant.status}`)
    const pay = payingFetch({
      scope: { chainId: network.chainId, assets: [{ address: usd.address as Address, decimals: usd.decimals, symbol: usd.symbol }] },
      authorizer: serviceAuthorizer({ baseUrl: o.baseUrl, token: agent.token, delegationId: x402Grant.id, payer: ownerAccount.address as Address, agent: o.agent })
    })
    const res = await pay(`${resource.url}/report`, { maxAmount: 50_000n })
    const body = await res.json()
    const settlement = settlementOf(res)
    say(`GET /report: ${res.status} ${JSON.stringify(body)}; settled in ${settlement?.transaction ?? "(no settlement header)"}`)
    if (res.status !== 200) throw new Error(`the paid request answered ${res.status}`)
    let payment: any
    for (let i = 0; i < 150 && payment === undefined; i++) {
      const list: ReadonlyArray<any> = await call("GET", `/payments/x402?delegationId=${x402Grant.id}`, owner.token)
      payment = list.find((p) => p.status === "settled")
      if (payment === undefined) await new Promise((r) => setTimeout(r, 200))
    }
    if (payment === undefined) throw new Error("the settlement was not recorded")
    say(`payment ${payment.id}: ${payment.status}, ${payment.settledAmount} ${payment.token ?? "USDC"} to ${payment.payTo} in ${payment.txHash}, recorded from the chain`)
    await spent(owner.token, x402Grant.id)
  } finally {
    await resource.close()
    await facilitator.close()
  }
}

export const runDelegationWalkthrough = async (o: WalkthroughOptions) => {
  const call = async (method: string, path: string, token: string | undefined, body?: unknown): Promise<any> => {
    const res = await fetch(`${o.baseUrl}${path}`, {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await res.text()
    const json = text === "" ? undefined : JSON.parse(text)
    if (!res.ok) throw new ApiError(res.status, json)
    return json
  }
  const step = (text: string) => o.log(`\n== ${text}`)
  const say = (text: string) => o.log(`   ${text}`)
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

  const signIn = async (who: LocalAccount) => {
    const nonce = await call("POST", "/auth/nonce", undefined)
    const message = signInMessage(who, nonce)
    return call("POST", "/auth/session", undefined, { message, signature: await who.signMessage({ message }) })
  }
  const relay = async (token: string, signer: LocalAccount, build: any) => {
    const signature = await signer.signTypedData!(build.typedData)
    let receipt = await call("POST", "/userops", token, { ...build.userOp, signature })
    for (let i = 0; i < 150 && receipt.status === "submitted"; i++) {
      await sleep(200)
      receipt = await call("GET", `/userops/${receipt.userOpId}`, token)
    }
    return receipt
  }
  const spent = async (token: string, id: string) => {
    const d = await call("GET", `/delegations/${id}`, token)
    for (const s of d.spentToDate) {
      say(`spentToDate: ${s.spent} of ${s.limit} ${s.token.symbol} spent, ${s.remaining} remaining${s.resetsAt === undefined ? "" : `, renews ${s.resetsAt}`} (status ${d.status})`)
    }
    return d
  }

  step(`sign in: owner ${o.owner.address}, agent ${o.agent.address} (POST /auth/nonce, POST /auth/session)`)
  const owner = await signIn(o.owner)
  const agent = await signIn(o.agent)
  const ownerAccount = owner.accounts[0]
  const agentAccount = agent.accounts[0]
  say(`owner's smart account ${ownerAccount.address} on ${ownerAccount.chain ?? ownerAccount.chainId}; agent's ${agentAccount.address}`)

  step("fund the owner's account with 100 test USDC (POST /dev/faucet, local networks only)")
  const funded = await call("POST", "/dev/faucet", owner.token, { address: ownerAccount.address, token: "USDC", amount: 100 })
  say(`minted in ${funded.txHash}; balance ${Number(funded.balanceUnits) / 1e6} USDC`)

  step("build the grant: 50 USDC a week, at most 20 per action, 10 actions, only to \"shop\", above 15 USDC the owner's approval (POST /delegations/build)")
  const build = await call("POST", "/delegations/build", owner.token, {
    name: "Groceries agent",
    kind: "agent",
    delegateeAddress: agentAccount.address,
    chainId: ownerAccount.chainId,
    budgets: [{ token: { symbol: "USDC" }, amount: 50, period: { every: "week" } }],
    perActionMax: { token: { symbol: "USDC" }, amount: 20 },
    maxActions: 10,
    recipientAllowlist: [{ name: "shop", address: "0x00000000000000000000000000000000000005a1", chainId: ownerAccount.chainId }],
    // The chain's ApprovalEnforcer holds transfers above 15 USDC for one signature of the owner's own key.
    approval: { required: 1, approvers: [o.owner.address], thresholds: [{ token: { symbol: "USDC" }, amount: 15 }] }
  })
  say(build.humanSummary)

  step("the owner signs the delegation and the enable operation (EIP-712), then grants it (POST /delegations)")
  const leg = build.delegations[0]
  const legSignature = await o.owner.signTypedData!({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
  const grant = await call("POST", "/delegations", owner.token, {
    userOp: { ...build.enableUserOp, signature: await o.owner.signTypedData!(build.typedData) },
    userOpHash: build.userOpHash,
    intentType: "delegation_enable",
    delegationSignatures: [{ permissionId: leg.permissionId, signature: legSignature }]
  })
  say(`delegation ${grant.id}: ${grant.status}`)
  await spent(owner.token, grant.id)

  step("the agent pays the shop 12.5 USDC with its own session (POST /delegations/{id}/actions, sign, POST /userops)")
  const action = await call("POST", `/delegations/${grant.id}/actions`, agent.token, { recipient: "shop", amount: 12.5 })
  const receipt = await relay(agent.token, o.agent, action)
  say(`operation ${receipt.userOpId}: ${receipt.status}${receipt.txHash === undefined ? "" : ` in ${receipt.txHash}`}`)
  await spent(owner.token, grant.id)

  step("the agent asks for 18 USDC, above the approval threshold: held for the owner's approval (422 approval_required)")
  const held = await call("POST", `/delegations/${grant.id}/actions`, agent.token, { recipient: "shop", amount: 18 }).then(
    () => undefined,
    (e: unknown) => e
  )
  if (!(held instanceof ApiError) || held.body.error.declineReason !== "approval_required") throw new Error(`18 USDC was not held for approval: ${String(held)}`)
  const approvalId: string = held.body.error.details.approvalId
  say(`${held.status} ${held.body.error.code}: declineReason approval_required, request ${approvalId}`)

  step("the owner reads the request and signs its EIP-712 Approval (GET /approvals/{id}, POST /approvals/{id}/approve)")
  const request = await call("GET", `/approvals/${approvalId}`, owner.token)
  say(request.summary)
  const approvalSignature = await o.owner.signTypedData!(request.toSign)
  const approved = await call("POST", `/approvals/${approvalId}/approve`, owner.token, { signature: approvalSignature })
  say(`request ${approved.status}: ${approved.approvals.length} of ${approved.required} approvals`)

  step("the agent builds the approved action, signs and relays it (POST /approvals/{id}/build, POST /userops)")
  const approvedReceipt = await relay(agent.token, o.agent, await call("POST", `/approvals/${approvalId}/build`, agent.token))
  say(`operation ${approvedReceipt.userOpId}: ${approvedReceipt.status}${approvedReceipt.txHash === undefined ? "" : ` in ${approvedReceipt.txHash}`}`)
  await spent(owner.token, grant.id)

  step("the agent tries 25 USDC, above the per-action maximum: declined")
  const declined = await call("POST", `/delegations/${grant.id}/actions`, agent.token, { recipient: "shop", amount: 25 }).then(
    () => undefined,
    (e: unknown) => e
  )
  if (!(declined instanceof ApiError)) throw new Error("the action above the maximum was not declined")
  say(`${declined.status} ${declined.body.error.code}: declineReason ${declined.body.error.declineReason} (${declined.body.error.message})`)
  await spent(owner.token, grant.id)

  step("the owner's activity for this grant (GET /activity?delegationId=...)")
  const page = await call("GET", `/activity?delegationId=${grant.id}&limit=10`, owner.token)
  for (const e of page.items) say(`${e.timeLabel} ${e.action} ${e.status}${e.amount === undefined ? "" : ` ${e.amount} ${e.token}`}${e.declineReason === undefined ? "" : ` (${e.declineReason})`}`)
  const executed = page.items.find((e: any) => e.action === "delegated_action" && e.status === "executed")

  step("the executed action's proof against the anchor on chain (GET /activity/{id}/proof)")
  let proof: AuditProof | undefined
  const deadline = Date.now() + (o.anchorWaitMs ?? 90_000)
  while (proof === undefined) {
    proof = await call("GET", `/activity/${executed.id}/proof`, owner.token).catch((e: unknown) => {
      if (e instanceof ApiError && e.status === 409 && Date.now() < deadline) return undefined
      throw e
    })
    if (proof === undefined) {
      say("not anchored yet; waiting for the next anchor")
      await sleep(5_000)
    }
  }
  const checked = o.rpcUrl === undefined ? checkProofOffline(proof) : await verifyProofOnChain(proof, o.rpcUrl)
  for (const c of checked.checks) say(c)
  if (!checked.ok) throw new Error(`the proof fails: ${checked.failure}`)
  say(`proven${o.rpcUrl === undefined ? " (offline checks; set RPC_URL to read the anchor transaction too)" : " on chain"}: anchor ${proof.anchor.txHash}`)

  step("x402: the agent pays a resource per request under a second grant (POST /payments/x402 through payingFetch)")
  await payPerRequest(o, call, owner, agent, say, spent)

  step("the owner revokes the grant (POST /delegations/{id}/revoke, sign, POST /userops)")
  const revoke = await call("POST", `/delegations/${grant.id}/revoke`, owner.token)
  const revoked = await relay(owner.token, o.owner, revoke)
  say(`operation ${revoked.userOpId}: ${revoked.status}`)
  await spent(owner.token, grant.id)

  step("the agent tries again: refused")
  const after = await call("POST", `/delegations/${grant.id}/actions`, agent.token, { recipient: "shop", amount: 1 }).then(
    () => undefined,
    (e: unknown) => e
  )
  if (!(after instanceof ApiError)) throw new Error("an action after the revoke was not refused")
  say(`${after.status} ${after.body.error.code}: declineReason ${after.body.error.declineReason}`)
  return { delegationId: grant.id, userOpId: receipt.userOpId }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const key = (name: string) => (process.env[name] as Hex | undefined) ?? generatePrivateKey()
  runDelegationWalkthrough({
    baseUrl: process.env.BASE_URL ?? "http://127.0.0.1:8080",
    owner: privateKeyToAccount(key("OWNER_KEY")),
    agent: privateKeyToAccount(key("AGENT_KEY")),
    ...(process.env.RPC_URL === undefined ? {} : { rpcUrl: process.env.RPC_URL }),
    log: (line) => console.log(line)
  }).catch((e) => {
    console.error("walkthrough failed:", e)
    process.exit(1)
  })
}
