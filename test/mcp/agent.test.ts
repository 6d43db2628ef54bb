/**
 * The agents' MCP server (issue 43, item 2), driven by the SDK's own client over both transports
 * against the test service on the local chain:
 * - Streamable HTTP at `/mcp` with the agent's session: 401 without it; the tools and their
 *   schemas; the grants with what is left; an action built, signed by the agent (the server holds
 *   no key), submitted and executed on chain; its receipt and, once anchored, its inclusion proof;
 *   hostile calls refused with their `declineReason` (another's grant, an amount above the
 *   grant, a token the grant does not hold, asking on another's grant), the chain refusing the same
 *   amount around the service; a request for more that changes nothing until the owner accepts,
 *   then an action under the new grant.
 * - stdio, spawning the entry with the agent's key: the same tools; an action signed and executed
 *   in the agent's process; an x402 resource paid under a grant (the real resource server and
 *   facilitator), settled on chain once; refusals; a request for more. Over HTTP the same grant's
 *   payment: the delegation to sign, signed by the agent, settled on chain.
 * - a session that ended: renewed where the agent holds its key, `unauthorized` where it does not.
 */
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Cause, Duration, Effect, Exit, Schedule } from "effect"
import { type Address, getAddress, type Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { Network } from "../../src/chain/Network.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { makeAgent } from "../../src/mcp/Agent.ts"
import { toolError } from "../../src/mcp/Views.ts"
import type { DelegationBuild } from "../../src/delegations/Domain.ts"
import { TOOL_NAMES } from "../../src/mcp/Tools.ts"
import { permissionContextOf } from "@das/x402-erc7710"
import { grant, makeAttacker, redeemCall, refused, transfer, withArgs } from "../delegations/attacker.ts"
import { newSession, type Session, signLeg, signOp, usdcBalance } from "../delegations/helpers.ts"
import { ownerAndAgent } from "../payments/support.ts"
import { balanceOf, paymentOf, randomAddress, requirementOf, startWorld, USD, usdc, type World } from "../payments/x402/support.ts"
import { mint } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { httpClient, ok, refusedCall, stdioClient } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

let world: World
beforeAll(async () => {
  world = await startWorld()
}, 60_000)
afterAll(async () => {
  await world?.close()
})

/** The owner signs and accepts the replacement a change request asks for (what the console or wallet does). */
const ownerAccepts = (owner: Session, changeId: string) =>
  Effect.gen(function*() {
    const build: typeof DelegationBuild.Type = yield* owner.api.approvals.buildChange({ params: { changeId } })
    const leg = build.delegations[0]!
    const signature = yield* signLeg(owner.key, leg.typedData)
    return yield* owner.api.approvals.acceptChange({
      params: { changeId },
      payload: { userOp: yield* signOp(owner.key, build.enableUserOp), userOpHash: build.userOpHash, delegationSignatures: [{ permissionId: leg.permissionId, signature }] }
    })
  })

/** An owner with 20 USDC, its agent, and a USDC grant to the agent's account (budget 10, at most 4 an action). */
const grantedAgent = Effect.gen(function*() {
  const owner = yield* newSession()
  const agent = yield* newSession()
  yield* mint("usd", owner.account.address as Hex, 20)
  const g = yield* grant(owner, agent, {
    budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
    perActionMax: { token: { symbol: "USDC" }, amount: 4 },
    maxActions: 5
  })
  return { owner, agent, g }
})

const noChangingTools = (names: ReadonlyArray<string>) =>
  assert.deepStrictEqual(names.filter((n) => /approve|accept|revoke|widen|decline|freeze|grant_more|sign_for/.test(n)), [])

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("the agents' MCP server", (it) => {
  it.effect("Streamable HTTP at /mcp: the agent's session, its grants, an action signed by the agent and executed, its proof; hostile calls refused; more asked, the owner accepts", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const anchor = yield* Anchor
      // The service anchors every ANCHOR_INTERVAL (60 s by default); here every second.
      yield* anchor.anchorNow.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))), Effect.forkScoped)
      const { owner, agent, g } = yield* grantedAgent
      const alice = randomAddress()

      // Without the session: the edge's 401 envelope; GET has no stream here (405).
      const bare = yield* Effect.promise(() =>
        fetch(`${baseUrl}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) }))
      assert.strictEqual(bare.status, 401)
      assert.strictEqual(((yield* Effect.promise(() => bare.json())) as { error: { code: string } }).error.code, "unauthorized")
      assert.strictEqual(bare.headers.get("www-authenticate"), "Bearer")
      const forged = yield* Effect.promise(() => fetch(`${baseUrl}/mcp`, { method: "POST", headers: { authorization: "Bearer forged", "content-type": "application/json" }, body: "{}" }))
      assert.strictEqual(forged.status, 401)
      // The agent's own session (sign-in with its key).
      const token = (yield* signIn(baseUrl, privateKeyToAccount(agent.key))).token
      const get = yield* Effect.promise(() => fetch(`${baseUrl}/mcp`, { headers: { authorization: `Bearer ${token}` } }))
      assert.strictEqual(get.status, 405)
      const mcp = yield* httpClient(baseUrl, token)
      const tools = (yield* Effect.promise(() => mcp.listTools())).tools
      assert.deepStrictEqual(tools.map((t) => t.name), [...TOOL_NAMES])
      for (const t of tools) {
        assert.strictEqual(t.inputSchema.type, "object", t.name)
        assert.strictEqual(t.outputSchema?.type, "object", `${t.name} has an output schema`)
      }
      noChangingTools(tools.map((t) => t.name))

      // The grants, with what is left.
      const listed = yield* ok(mcp, "list_grants", {})
      const mine = (listed["grants"] as Array<any>).find((x) => x.id === g.id)
      assert.isDefined(mine, JSON.stringify(listed))
      assert.strictEqual(mine.payer.toLowerCase(), owner.account.address.toLowerCase())
      assert.deepStrictEqual([mine.perActionMax.amount, mine.maxActions, mine.status], [4, 5, "active"])
      assert.deepStrictEqual(mine.budgets.map((b: any) => [b.token.symbol, b.kind, b.limit, b.spent, b.reserved, b.left]), [["USDC", "total", 10, 0, 0, 10]])

      // An action: the server holds no key, so it answers the build; the agent signs and submits it.
      const built = yield* ok(mcp, "act", { grantId: g.id, recipient: alice, amount: 3 })
      assert.strictEqual(built["status"], "needs_signature")
      const signature = yield* Effect.promise(() => privateKeyToAccount(agent.key).signTypedData(built["build"].typedData))
      const done = yield* ok(mcp, "submit_signed_action", { userOp: { ...built["build"].userOp, signature } })
      assert.strictEqual(done["status"], "executed", JSON.stringify(done))
      assert.match(done["receipt"].transactionHash, /^0x[0-9a-f]{64}$/)
      assert.strictEqual(yield* usdcBalance(alice), USD(3), "3 USDC moved on chain")
      const after = (yield* ok(mcp, "get_grant", { grantId: g.id }))["grant"]
      assert.deepStrictEqual(after.budgets.map((b: any) => [b.spent, b.left]), [[3, 7]])

      // Its receipt and, once an anchor covers its entry, the inclusion proof.
      const proven = yield* waitFor("the action's inclusion proof", Effect.map(ok(mcp, "get_receipt", { userOpId: done["receipt"].userOpId }), (r) =>
        r["proofStatus"] === "proven" ? r : undefined))
      assert.strictEqual(proven["receipt"].transactionHash, done["receipt"].transactionHash)
      assert.strictEqual(proven["proof"].eventId, done["receipt"].auditEventId)
      assert.isAbove(proven["proof"].treeSize, proven["proof"].leafIndex)

      // Hostile calls: refused with the reason, nothing reserved or moved.
      const over = yield* refusedCall(mcp, "act", { grantId: g.id, recipient: alice, amount: 5 })
      assert.deepStrictEqual([over.code, over.declineReason], ["out_of_scope", "per_action_exceeded"])
      const wrongToken = yield* refusedCall(mcp, "act", { grantId: g.id, recipient: alice, amount: 1, token: "USDT" })
      assert.strictEqual(wrongToken.declineReason, "token_not_allowed")
      const other = yield* grantedAgent
      const theirs = yield* refusedCall(mcp, "act", { grantId: other.g.id, recipient: alice, amount: 1 })
      assert.deepStrictEqual([theirs.code, theirs.declineReason], ["not_found", "not_found"])
      assert.strictEqual((yield* refusedCall(mcp, "get_grant", { grantId: other.g.id })).declineReason, "not_found")
      assert.strictEqual((yield* refusedCall(mcp, "request_more", { grantId: other.g.id, reason: "mine now", budgets: [{ token: "USDC", amount: 100 }] })).declineReason, "not_found")
      const badArgs = yield* Effect.promise(() => mcp.callTool({ name: "act", arguments: { grantId: g.id, recipient: alice, amount: -1 } }))
      assert.isTrue(badArgs.isError, "the input schema refuses a negative amount")
      assert.deepStrictEqual((yield* ok(mcp, "get_grant", { grantId: g.id }))["grant"].budgets.map((b: any) => [b.spent, b.reserved, b.left]), [[3, 0, 7]])
      assert.strictEqual(yield* usdcBalance(alice), USD(3))
      // Around the service the chain refuses the same amount (TransferCapEnforcer holds the per-action maximum).
      const attacker = yield* makeAttacker(agent.key, agent.account.address)
      yield* refused(attacker, { tokens: [usdc], holders: [owner.account.address as Address, alice] },
        redeemCall(withArgs(g.signed as Delegation, net.delegation.caveatEnforcers, { tokenIndex: 0 }), transfer(usdc, alice, USD(5))), "TransferCapEnforcer:amount-exceeded")

      // Asking for more changes nothing until the owner accepts; then the agent acts under the new grant.
      const asked = yield* ok(mcp, "request_more", { grantId: g.id, reason: "the month's invoices", budgets: [{ token: "USDC", amount: 15 }] })
      assert.strictEqual(asked["request"].status, "pending")
      assert.include(asked["request"].diff.map((d: any) => d.text).join(" "), "15 USDC")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: g.id } })).policySet.budgets[0]!.amount, 10, "the grant is unchanged")
      const accepted = yield* ownerAccepts(owner, asked["request"].id)
      assert.strictEqual(accepted.status, "accepted")
      const read = (yield* ok(mcp, "get_request", { requestId: asked["request"].id }))["request"]
      assert.deepStrictEqual([read.status, read.newGrantId], ["accepted", accepted.newDelegationId])
      const again = yield* ok(mcp, "act", { grantId: read.newGrantId, recipient: alice, amount: 4 })
      const signed2 = yield* Effect.promise(() => privateKeyToAccount(agent.key).signTypedData(again["build"].typedData))
      assert.strictEqual((yield* ok(mcp, "submit_signed_action", { userOp: { ...again["build"].userOp, signature: signed2 } }))["status"], "executed")
      assert.strictEqual(yield* usdcBalance(alice), USD(7))
      const replaced = (yield* ok(mcp, "get_grant", { grantId: read.newGrantId }))["grant"]
      assert.deepStrictEqual(replaced.budgets.map((b: any) => [b.limit, b.spent, b.left]), [[15, 7, 8]])
    }), { timeout: 240_000 })

  it.effect("stdio with the agent's key: the same tools; an action signed in the agent's process and executed; an x402 resource paid under a grant; refusals; more asked", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      // The owner (10 USDC) and the agent (its key) holding a payment grant naming the world's facilitator,
      // and a grant to the agent's account for actions.
      const p = yield* ownerAndAgent(world.facilitator.address, { budget: 1, perAction: 0.5 })
      const acts = yield* grant(p.owner, p.agentSession, {
        budgets: [{ token: { symbol: "USDC" }, amount: 2 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 1 },
        maxActions: 5
      })
      const bob = randomAddress()
      const stderr: Array<string> = []
      const mcp = yield* stdioClient(baseUrl, p.agentKey, stderr)
      const tools = (yield* Effect.promise(() => mcp.listTools())).tools
      assert.deepStrictEqual(tools.map((t) => t.name), [...TOOL_NAMES], stderr.join(""))
      noChangingTools(tools.map((t) => t.name))

      const listed = (yield* ok(mcp, "list_grants", {}))["grants"] as Array<any>
      assert.deepStrictEqual(listed.find((x) => x.id === acts.id)?.budgets.map((b: any) => [b.limit, b.left]), [[2, 2]])

      // Signed here and relayed: the receipt of an executed operation.
      const done = yield* ok(mcp, "act", { grantId: acts.id, recipient: bob, amount: 0.75 })
      assert.strictEqual(done["status"], "executed", JSON.stringify(done))
      assert.strictEqual(yield* usdcBalance(bob), USD(0.75))
      const receipt = (yield* ok(mcp, "get_receipt", { userOpId: done["receipt"].userOpId }))["receipt"]
      assert.deepStrictEqual([receipt.status, receipt.outcome, receipt.transactionHash], ["included", "mined", done["receipt"].transactionHash])

      // An x402 resource paid under the payment grant: the resource, the settlement, on chain once.
      const before = yield* Effect.promise(() => balanceOf(usdc, world.merchant))
      const paid = yield* ok(mcp, "pay_x402", { grantId: p.grantId, url: `${world.resource.url}/report`, maxUnits: USD(0.05).toString() })
      assert.strictEqual(paid["status"], "paid", JSON.stringify(paid))
      assert.strictEqual(paid["response"].status, 200)
      assert.deepStrictEqual(JSON.parse(paid["response"].body), { report: "all systems nominal", price: USD(0.01).toString() })
      assert.isTrue(paid["settlement"].success)
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, world.merchant)), before + USD(0.01))
      const payment = yield* waitFor("the payment recorded as settled", p.owner.api.payments.list({ query: { delegationId: p.grantId } }).pipe(
        Effect.orDie,
        Effect.map((list) => list.find((x) => x.status === "settled"))
      ))
      assert.strictEqual(payment.txHash, paid["settlement"].transaction.toLowerCase())

      // Refusals, with the reason: above the grant, another's grant, a ceiling below the price (nothing signed).
      const over = yield* refusedCall(mcp, "act", { grantId: acts.id, recipient: bob, amount: 1.5 })
      assert.strictEqual(over.declineReason, "per_action_exceeded")
      const other = yield* grantedAgent
      assert.strictEqual((yield* refusedCall(mcp, "act", { grantId: other.g.id, recipient: bob, amount: 0.1 })).declineReason, "not_found")
      assert.strictEqual((yield* refusedCall(mcp, "pay_x402", { grantId: other.g.id, url: `${world.resource.url}/report`, maxUnits: "50000" })).declineReason, "not_found")
      const cheap = yield* refusedCall(mcp, "pay_x402", { grantId: p.grantId, url: `${world.resource.url}/report`, maxUnits: "100" })
      assert.deepStrictEqual([cheap.code, cheap.details?.["field"]], ["payment_refused", "amount"])
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, world.merchant)), before + USD(0.01), "paid once")
      assert.strictEqual(yield* usdcBalance(bob), USD(0.75))

      // Over HTTP the server holds no key and fetches nothing: with the 402's offer it answers what to sign;
      // the agent signs it and the payment settles on chain (here the facilitator settles it as the resource server would).
      const web = yield* httpClient(baseUrl, p.token)
      assert.deepStrictEqual((yield* refusedCall(web, "pay_x402", { grantId: p.grantId, url: `${world.resource.url}/report`, maxUnits: "50000" })).details?.["field"], "offer")
      const offer = requirementOf(world, { scheme: "exact", amount: USD(0.01) })
      assert.deepStrictEqual((yield* refusedCall(web, "pay_x402", { grantId: p.grantId, url: `${world.resource.url}/report`, maxUnits: "9999", offer })).details?.["field"], "offer.amount")
      const tooMuch = yield* refusedCall(web, "pay_x402", { grantId: p.grantId, url: `${world.resource.url}/report`, maxUnits: "900000", offer: { ...offer, amount: USD(0.6).toString() } })
      assert.strictEqual(tooMuch.declineReason, "per_action_exceeded")
      const toSign = yield* ok(web, "pay_x402", { grantId: p.grantId, url: `${world.resource.url}/report`, maxUnits: "50000", offer })
      assert.strictEqual(toSign["status"], "needs_signature")
      const auth = toSign["authorization"]
      assert.deepStrictEqual([auth.amount, auth.payer.toLowerCase()], [USD(0.01).toString(), p.owner.account.address.toLowerCase()])
      const paymentSignature = yield* Effect.promise(() =>
        p.agent.signTypedData({ ...auth.typedData, message: { ...auth.typedData.message, salt: BigInt(auth.typedData.message.salt) } }))
      const payload = {
        delegationManager: getAddress(auth.delegationManager),
        delegator: getAddress(auth.payer),
        permissionContext: permissionContextOf([{ ...auth.delegation, signature: paymentSignature }, auth.grant] as never)
      }
      const settledOverHttp = yield* Effect.promise(() => world.facilitator.facilitator.settle(paymentOf(offer, payload), offer))
      assert.isTrue(settledOverHttp.success, JSON.stringify(settledOverHttp))
      assert.strictEqual(yield* Effect.promise(() => balanceOf(usdc, world.merchant)), before + USD(0.02), "the second payment settled on chain")

      const asked = yield* ok(mcp, "request_more", { grantId: acts.id, reason: "more deliveries", maxActions: 10 })
      assert.strictEqual(asked["request"].status, "pending")
      assert.strictEqual((yield* p.owner.api.delegations.get({ params: { delegationId: acts.id } })).policySet.maxActions, 5)
    }), { timeout: 300_000 })

  it.effect("a session that ended is renewed where the agent can sign in (stdio's agent); over HTTP the caller's token is the session", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const { agent, g } = yield* grantedAgent
      const signer = privateKeyToAccount(agent.key)
      const first = (yield* signIn(baseUrl, signer)).token
      const renewals: Array<string> = []
      const renew = Effect.tap(Effect.map(signIn(baseUrl, signer), (s) => s.token), (t) => Effect.sync(() => renewals.push(t)))
      const local = makeAgent({ baseUrl, token: first, signer, renew })
      const remote = makeAgent({ baseUrl, token: first })
      assert.deepStrictEqual((yield* local.getGrant({ grantId: g.id })).grant.id, g.id)
      // The session ends (signed out: as if SESSION_TTL passed).
      const ended = yield* makeClient({ baseUrl, token: first })
      yield* ended.session.signOut()
      const exit = yield* Effect.exit(remote.getGrant({ grantId: g.id }))
      assert.strictEqual(Exit.isFailure(exit) ? toolError(Cause.squash(exit.cause)).code : "succeeded", "unauthorized")
      assert.deepStrictEqual((yield* local.getGrant({ grantId: g.id })).grant.id, g.id, "renewed once, then answered")
      assert.lengthOf(renewals, 1)
      assert.notStrictEqual(renewals[0], first)
    }))
})
