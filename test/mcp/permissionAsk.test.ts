/**
 * An agent asks for a NEW permission (issue 43, h43 item 1): the MCP tool `request_permission`
 * over both transports (the SDK's own client: Streamable HTTP at `/mcp`, stdio spawning the
 * entry) and `@das/agent-client`'s `askForPermission`. The ask lands as the owner's permission
 * approval (what the owner's wallet finds at `GET /permissions/approvals`), nothing is granted
 * until the owner signs it; the agent reads the answer and, once granted, the chain holds the
 * grant to what was asked (the agent's own redemption beyond it refused on chain). Hostile asks
 * (another user's account, a `to` that is not the agent, an absurd amount, NUL and 10 kB
 * justifications, a second ask while one is pending) are refused with a clear error and store
 * nothing.
 */
import { AgentClient, ApiError } from "@das/agent-client"
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Address, Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { grant } from "../delegations/attacker.ts"
import { newSession } from "../delegations/helpers.ts"
import { accepted, eoaAgent, erc20Transfer, refusedOnChain, tokenBalance } from "../permissions/agent.ts"
import { signApproval } from "../permissions/wallet.ts"
import { randomAddress, startWorld, USD, usdc, type World } from "../payments/x402/support.ts"
import { mint } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { httpClient, ok, refusedCall, stdioClient } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

let world: World
beforeAll(async () => {
  world = await startWorld()
}, 60_000)
afterAll(async () => {
  await world?.close()
})

/** The agent's asks stored, whoever's approval they are. */
const asksOf = (agent: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM permission_approvals WHERE requested_by = ${agent.toLowerCase()}`
    return Number(rows[0]!.n)
  }).pipe(Effect.orDie)

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("an agent asks for a new permission", (it) => {
  it.effect("over /mcp and stdio and with the agent client: hostile asks refused, nothing stored; the owner's wallet signs; the chain holds the grant", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const owner = yield* newSession()
      const agent = yield* newSession()
      const stranger = yield* newSession()
      yield* mint("usd", owner.account.address as Hex, 20)
      // The agent works for this owner: it holds one grant of the owner's account.
      yield* grant(owner, agent, {
        budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 4 },
        maxActions: 5
      })
      const agentKey = privateKeyToAccount(agent.key)
      const token = (yield* signIn(baseUrl, agentKey)).token
      const mcp = yield* httpClient(baseUrl, token)
      const ask = (over: Record<string, unknown> = {}) => ({
        payer: owner.account.address,
        chainId: net.chainId,
        type: "erc20-token-periodic",
        tokenAddress: usdc,
        amount: USD(5).toString(),
        periodSeconds: 86_400,
        justification: "Daily data feeds for the research task",
        ...over
      })

      // Hostile asks, each refused with its reason; nothing is stored, the owner is offered nothing.
      const notMine = yield* refusedCall(mcp, "request_permission", ask({ payer: stranger.account.address }))
      assert.strictEqual(notMine.code, "not_found")
      assert.include(notMine.message, "has granted this agent anything")
      const absurd = yield* refusedCall(mcp, "request_permission", ask({ amount: (10n ** 9n * 10n ** 6n + 1n).toString() }))
      assert.strictEqual(absurd.code, "bad_request")
      assert.strictEqual(absurd.details?.["field"], "request.permission.data.periodAmount")
      const huge = yield* refusedCall(mcp, "request_permission", ask({ amount: (2n ** 256n).toString() }))
      assert.strictEqual(huge.code, "bad_request")
      assert.strictEqual(huge.details?.["field"], "request.permission.data.periodAmount")
      const nul = yield* refusedCall(mcp, "request_permission", ask({ justification: "fine\u0000print" }))
      assert.strictEqual(nul.code, "bad_request")
      assert.strictEqual(nul.details?.["field"], "request.permission.data.justification")
      const blank = yield* refusedCall(mcp, "request_permission", ask({ justification: "\u200b\u202e " }))
      assert.strictEqual(blank.details?.["field"], "request.permission.data.justification")
      // 10 kB: over the tool's own input schema (the SDK refuses it before the tool runs).
      const long = yield* Effect.promise(() => mcp.callTool({ name: "request_permission", arguments: ask({ justification: "x".repeat(10_000) }) }))
      assert.isTrue(long.isError === true)

      // The agent client: 10 kB and a `to` that is not the agent are 400s naming the field; another's account a 404.
      const client = yield* Effect.promise(() => AgentClient.signIn({ baseUrl, signer: agentKey }))
      const request = (over: { readonly data?: Record<string, unknown>; readonly from?: Address; readonly to?: Address } = {}) => ({
        chainId: `0x${net.chainId.toString(16)}` as Hex,
        from: over.from ?? (owner.account.address as Address),
        ...(over.to === undefined ? {} : { to: over.to }),
        permission: {
          type: "erc20-token-allowance",
          isAdjustmentAllowed: false,
          data: { tokenAddress: usdc, allowanceAmount: `0x${USD(2).toString(16)}`, justification: "One report", ...over.data }
        }
      })
      const refusedBy = (p: Promise<unknown>) => Effect.promise(() => p.then(() => undefined, (e: unknown) => e as ApiError))
      const tenKb = yield* refusedBy(client.askForPermission(request({ data: { justification: "y".repeat(10_240) } })))
      assert.instanceOf(tenKb, ApiError)
      assert.strictEqual(tenKb!.status, 400)
      assert.strictEqual(tenKb!.details?.["field"], "request.permission.data.justification")
      const forOther = yield* refusedBy(client.askForPermission(request({ to: randomAddress() })))
      assert.strictEqual(forOther!.status, 400)
      assert.strictEqual(forOther!.details?.["field"], "request.to")
      const strangers = yield* refusedBy(client.askForPermission(request({ from: stranger.account.address as Address })))
      assert.strictEqual(strangers!.status, 404)
      assert.strictEqual(yield* asksOf(agentKey.address), 0, "nothing stored for any refused ask")
      assert.lengthOf(yield* owner.api.permissions.approvals({ query: {} }), 0)
      assert.lengthOf(yield* stranger.api.permissions.approvals({ query: {} }), 0)

      // A fair ask over /mcp: pending, the summary from the terms with the agent's words quoted last.
      const asked = (yield* ok(mcp, "request_permission", ask())) as { request: Record<string, any>; next: string }
      assert.strictEqual(asked.request["status"], "pending")
      assert.strictEqual(asked.request["payer"], owner.account.address.toLowerCase())
      assert.include(asked.request["summary"], "5 USDC")
      assert.match(asked.request["summary"] as string, /Named by the requester: "Daily data feeds for the research task"\.$/)
      assert.isUndefined(asked.request["grantId"])
      const requestId = asked.request["id"] as string
      // One pending ask per owner: a second is a 409 naming the first.
      const twice = yield* refusedCall(mcp, "request_permission", ask({ amount: USD(1).toString() }))
      assert.strictEqual(twice.code, "conflict")
      assert.strictEqual(twice.details?.["approvalId"], requestId)
      assert.strictEqual(yield* asksOf(agentKey.address), 1)
      // Another agent cannot read it.
      assert.strictEqual((yield* refusedBy(new AgentClient({ baseUrl, token: (yield* signIn(baseUrl, privateKeyToAccount(stranger.key))).token }).permissionAsk(requestId)))!.status, 404)

      // Where the owner decides: the owner's wallet finds it, with who asked; the owner was told.
      const [pending] = yield* owner.api.permissions.approvals({ query: { status: "pending" } })
      assert.strictEqual(pending?.id, requestId)
      assert.strictEqual(pending?.requestedBy, agentKey.address.toLowerCase())
      const told = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
      assert.isTrue(JSON.stringify(told).includes(requestId), "the owner is notified of the ask")
      // Nothing granted before the owner signs.
      const still = (yield* ok(mcp, "get_permission_request", { requestId })) as { request: Record<string, any> }
      assert.strictEqual(still.request["status"], "pending")

      const approved = yield* owner.api.permissions.approve({ params: { approvalId: requestId }, payload: { signatures: yield* signApproval(owner, pending!) } })
      assert.strictEqual(approved.status, "granted")
      const got = (yield* ok(mcp, "get_permission_request", { requestId })) as { request: Record<string, any> }
      assert.strictEqual(got.request["status"], "granted")
      assert.isString(got.request["grantId"])
      const context = got.request["context"] as Hex
      // The new grant is the agent's: listed with 5 USDC a day.
      const listed = (yield* ok(mcp, "get_grant", { grantId: got.request["grantId"] })) as { grant: Record<string, any> }
      assert.strictEqual(listed.grant["budgets"][0]["limit"], 5)

      // The chain is the guard: the agent's own redemption within the day's 5 USDC moves, beyond it is refused.
      const eoa = yield* eoaAgent(agent.key)
      const alice = randomAddress()
      accepted(yield* Effect.promise(() => eoa.redeem({ to: usdc, data: erc20Transfer(alice, USD(3)) }, context)))
      assert.strictEqual(yield* tokenBalance(usdc, alice), USD(3))
      const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
      const before = yield* balances
      refusedOnChain(yield* Effect.promise(() => eoa.redeem({ to: usdc, data: erc20Transfer(alice, USD(2) + 1n) }, context)),
        "MultiTokenPeriodEnforcer:transfer-amount-exceeded", before, yield* balances)

      // Over stdio (the agent's own process, its key): the same tool; the owner rejects this one.
      const stderr: Array<string> = []
      const local = yield* stdioClient(baseUrl, agent.key, stderr)
      // Its first call waits for the process to load the tools' modules and sign in (docs/mcp.md,
      // "Sessions"): tens of seconds on a loaded machine, so that one call may take up to 3 minutes.
      yield* Effect.promise(() => local.callTool({ name: "list_grants", arguments: {} }, undefined, { timeout: 180_000 }))
      const refusedLocal = yield* refusedCall(local, "request_permission", ask({ payer: stranger.account.address }))
      assert.strictEqual(refusedLocal.code, "not_found", stderr.join(""))
      const second = (yield* ok(local, "request_permission", ask({ type: "erc20-token-allowance", amount: USD(1).toString(), periodSeconds: undefined, justification: "One more report" }))) as {
        request: Record<string, any>
      }
      assert.strictEqual(second.request["status"], "pending", stderr.join(""))
      yield* owner.api.permissions.reject({ params: { approvalId: second.request["id"] } })
      const answered = yield* Effect.promise(() => client.waitForPermission(second.request["id"], { timeoutMs: 10_000, intervalMs: 200 }))
      assert.strictEqual(answered.status, "rejected")
      const readLocal = (yield* ok(local, "get_permission_request", { requestId: second.request["id"] })) as { request: Record<string, any> }
      assert.strictEqual(readLocal.request["status"], "rejected")
      assert.isUndefined(readLocal.request["grantId"])
      assert.strictEqual(yield* asksOf(agentKey.address), 2)
    }).pipe(Effect.scoped), { timeout: 400_000 })
})
