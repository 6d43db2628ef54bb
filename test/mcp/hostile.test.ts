/**
 * A hostile agent at `/mcp` (h48d item 1), the SDK's own client with the agent's own session
 * against the test service on the local chain. Agent A holds a grant (10 USDC, at most 4 an
 * action, one named recipient); agent B, another owner's, holds its own grant, an action build,
 * an executed operation, a change request and a permission ask. A calls every tool that takes an
 * id with B's ids, and acts under its own grant with widened amounts (over the per-action maximum,
 * over what is left, 20 decimals, 1e400 on the wire, hex, unicode digits, a NUL, negative, zero),
 * another recipient, another token, B's build re-signed with A's key and A's own build moved to
 * another chain id. Each is refused with a clear error that names nothing of B's, and nothing of
 * B's changes (its reservations, declines, change requests, asks, audit entries: the DB rows), nor
 * does anything move on chain.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { grant } from "../delegations/attacker.ts"
import { newSession, usdcBalance } from "../delegations/helpers.ts"
import { randomAddress, USD, usdc } from "../payments/x402/support.ts"
import { mint } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { httpClient, ok, refusedCall } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

/** What the service holds of a grant: reservations by status, declines, change requests, its account's audit entries. */
const rowsOf = (grantId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [r] = yield* sql<{ reservations: string; declines: string; changes: string; audit: string }>`
      SELECT
        (SELECT coalesce(string_agg(status || ':' || units::text, ',' ORDER BY id), '') FROM delegation_reservations WHERE delegation_id = ${grantId}) AS reservations,
        (SELECT count(*)::text FROM delegation_declines WHERE delegation_id = ${grantId}) AS declines,
        (SELECT coalesce(string_agg(id || ':' || status, ',' ORDER BY id), '') FROM grant_change_requests WHERE delegation_id = ${grantId}) AS changes,
        (SELECT count(*)::text FROM audit_entries WHERE account_id = (SELECT account_id FROM delegations WHERE id = ${grantId})) AS audit`
    return r!
  }).pipe(Effect.orDie)

const asksBy = (agent: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ s: string }>`SELECT coalesce(string_agg(id || ':' || status, ',' ORDER BY id), '') AS s FROM permission_approvals WHERE requested_by = ${agent.toLowerCase()}`
    return rows[0]!.s
  }).pipe(Effect.orDie)

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("a hostile agent at /mcp", (it) => {
  it.effect("another's ids, widened amounts, another recipient, token or chain: refused with a clear error naming nothing of another's, nothing changed", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const ownerA = yield* newSession()
      const agentA = yield* newSession()
      const ownerB = yield* newSession()
      const agentB = yield* newSession()
      yield* mint("usd", ownerA.account.address as Hex, 20)
      yield* mint("usd", ownerB.account.address as Hex, 20)
      const carol = randomAddress()
      const mallory = randomAddress()
      const gA = yield* grant(ownerA, agentA, {
        budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 4 },
        maxActions: 5,
        recipientAllowlist: [{ name: "Carol", address: carol, chainId: net.chainId }]
      })
      const bob = randomAddress()
      const gB = yield* grant(ownerB, agentB, {
        budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 4 },
        maxActions: 5
      })
      const b = yield* httpClient(baseUrl, (yield* signIn(baseUrl, privateKeyToAccount(agentB.key))).token)
      const a = yield* httpClient(baseUrl, (yield* signIn(baseUrl, privateKeyToAccount(agentA.key))).token)

      // B's things: an executed operation, an open build, a change request, a permission ask.
      const builtB = yield* ok(b, "act", { grantId: gB.id, recipient: bob, amount: 1 })
      const signedB = yield* Effect.promise(() => privateKeyToAccount(agentB.key).signTypedData(builtB["build"].typedData))
      const doneB = yield* ok(b, "submit_signed_action", { userOp: { ...builtB["build"].userOp, signature: signedB } })
      assert.strictEqual(doneB["status"], "executed", JSON.stringify(doneB))
      const openB = yield* ok(b, "act", { grantId: gB.id, recipient: bob, amount: 2 })
      const changeB = (yield* ok(b, "request_more", { grantId: gB.id, reason: "B's invoices", budgets: [{ token: "USDC", amount: 15 }] }))["request"]
      const askB = (yield* ok(b, "request_permission", {
        payer: ownerB.account.address,
        chainId: net.chainId,
        type: "erc20-token-periodic",
        tokenAddress: usdc,
        amount: USD(5).toString(),
        periodSeconds: 86_400,
        justification: "B's data feeds"
      }))["request"]
      const bBefore = yield* rowsOf(gB.id)
      const asksBefore = yield* asksBy(agentB.account.address)
      const bobBefore = yield* usdcBalance(bob)
      assert.strictEqual(bobBefore, USD(1))

      // Nothing of B's in any refusal: not its owner, its agent, its account, its grant's name or its words.
      const secrets = [ownerB.account.address, agentB.account.address, bob, "B's invoices", "B's data feeds"].map((s) => s.toLowerCase())
      const namesNothingOfB = (what: string, e: { message: string; details?: unknown }) => {
        const said = `${e.message} ${JSON.stringify(e.details ?? {})}`.toLowerCase()
        for (const s of secrets) assert.notInclude(said, s, `${what} names B's ${s}`)
      }
      const notFound = (what: string, e: { code: string; declineReason: string; message: string; details?: unknown }) => {
        assert.deepStrictEqual([e.code, e.declineReason], ["not_found", "not_found"], `${what}: ${e.message}`)
        namesNothingOfB(what, e)
      }

      // Every tool that takes an id, with B's: answered as if it did not exist.
      notFound("get_grant", yield* refusedCall(a, "get_grant", { grantId: gB.id }))
      notFound("act", yield* refusedCall(a, "act", { grantId: gB.id, recipient: bob, amount: 1 }))
      notFound("act to A's own address", yield* refusedCall(a, "act", { grantId: gB.id, recipient: agentA.account.address, amount: 1 }))
      notFound("request_more", yield* refusedCall(a, "request_more", { grantId: gB.id, reason: "mine now", budgets: [{ token: "USDC", amount: 100 }] }))
      notFound("get_request", yield* refusedCall(a, "get_request", { requestId: changeB.id }))
      notFound("get_permission_request", yield* refusedCall(a, "get_permission_request", { requestId: askB.id }))
      notFound("get_receipt", yield* refusedCall(a, "get_receipt", { userOpId: doneB["receipt"].userOpId, wait: 0 }))
      notFound("pay_x402", yield* refusedCall(a, "pay_x402", { grantId: gB.id, url: "http://127.0.0.1:9/report", maxUnits: "50000" }))
      // Asking B's owner: the refusal repeats only the address A named, and reads as it does for an account no one has.
      const askOf = (payer: string) =>
        refusedCall(a, "request_permission", {
          payer,
          chainId: net.chainId,
          type: "erc20-token-allowance",
          tokenAddress: usdc,
          amount: USD(5).toString(),
          justification: "let me in"
        })
      const nobody = randomAddress()
      const askedB = yield* askOf(ownerB.account.address)
      const askedNobody = yield* askOf(nobody)
      assert.deepStrictEqual([askedB.code, askedB.declineReason], ["not_found", "not_found"])
      assert.strictEqual(askedB.message.toLowerCase().replace(ownerB.account.address.toLowerCase(), "<payer>"), askedNobody.message.toLowerCase().replace(nobody.toLowerCase(), "<payer>"))
      // B's open build, its signature replaced by A's: not A's to submit, and not valid for B's account.
      const signedByA = yield* Effect.promise(() => privateKeyToAccount(agentA.key).signTypedData(openB["build"].typedData))
      const stolen = yield* refusedCall(a, "submit_signed_action", { userOp: { ...openB["build"].userOp, signature: signedByA } })
      namesNothingOfB("submit_signed_action of B's build", stolen)
      assert.include(["not_found", "forbidden", "bad_request", "unauthorized"], stolen.code, stolen.message)

      assert.deepStrictEqual(yield* rowsOf(gB.id), bBefore, "nothing of B's changed")
      assert.strictEqual(yield* asksBy(agentB.account.address), asksBefore)
      assert.strictEqual(yield* usdcBalance(bob), bobBefore)
      assert.strictEqual((yield* ok(b, "get_request", { requestId: changeB.id }))["request"].status, "pending")

      // Widened amounts under A's own grant: each refused with its reason; nothing reserved.
      const aBefore = yield* rowsOf(gA.id)
      const declined = (amount: unknown) => refusedCall(a, "act", { grantId: gA.id, recipient: carol, amount })
      assert.strictEqual((yield* declined(4.5)).declineReason, "per_action_exceeded")
      assert.strictEqual((yield* declined(11)).declineReason, "per_action_exceeded")
      // 20 decimals (finer than USDC's 6) and 7: not an amount the token can move (never rounded to one it can).
      for (const amount of [1e-20, 1.0000001, 0.0000001]) {
        const e = yield* declined(amount)
        assert.notStrictEqual(e.code, "ok", String(amount))
        assert.include(["bad_request", "out_of_scope"], e.code, `${amount}: ${e.message}`)
      }
      // Outside the input schema (refused by the SDK before the tool runs): negative, zero, hex, unicode digits, a NUL, a string.
      for (const amount of [-1, 0, "0x10", "４", "1\u0000", "1", Number.MAX_VALUE * 10]) {
        const r = yield* Effect.promise(() => a.callTool({ name: "act", arguments: { grantId: gA.id, recipient: carol, amount } }))
        assert.isTrue(r.isError, `amount ${JSON.stringify(amount)} was not refused`)
      }
      // 1e400 on the wire: JSON has no such number (it parses to Infinity), so the schema's finite() refuses it.
      const token = (yield* signIn(baseUrl, privateKeyToAccount(agentA.key))).token
      const raw = yield* Effect.promise(async () => {
        const r = await fetch(`${baseUrl}/mcp`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"act","arguments":{"grantId":"${gA.id}","recipient":"${carol}","amount":1e400}}}`
        })
        return (await r.json()) as { result?: { isError?: boolean }; error?: unknown }
      })
      assert.isTrue(raw.result?.isError === true || raw.error !== undefined, JSON.stringify(raw))
      // Another recipient than the allowlist's, A's own address among them, and another token than the grant's.
      assert.strictEqual((yield* refusedCall(a, "act", { grantId: gA.id, recipient: mallory, amount: 1 })).declineReason, "recipient_not_allowed")
      assert.strictEqual((yield* refusedCall(a, "act", { grantId: gA.id, recipient: agentA.account.address, amount: 1 })).declineReason, "recipient_not_allowed")
      assert.strictEqual((yield* refusedCall(a, "act", { grantId: gA.id, recipient: "Mallory", amount: 1 })).declineReason, "recipient_not_allowed")
      assert.strictEqual((yield* refusedCall(a, "act", { grantId: gA.id, recipient: carol, amount: 1, token: "USDT" })).declineReason, "token_not_allowed")
      const aAfterRefusals = yield* rowsOf(gA.id)
      assert.strictEqual(aAfterRefusals.reservations, aBefore.reservations, "nothing reserved by a refused action")
      assert.strictEqual(aAfterRefusals.changes, aBefore.changes)

      // Over what is left: 4 + 4 reserved by two builds, then 3 more is over the 10.
      const first = yield* ok(a, "act", { grantId: gA.id, recipient: "Carol", amount: 4 })
      yield* ok(a, "act", { grantId: gA.id, recipient: carol, amount: 4 })
      const reserved = (yield* rowsOf(gA.id)).reservations
      assert.strictEqual(reserved.split(",").length, 2, reserved)
      assert.strictEqual((yield* declined(3)).declineReason, "cap_exceeded")
      assert.strictEqual((yield* rowsOf(gA.id)).reservations, reserved, "nothing more reserved")

      // A's own build moved to another chain id: the signature no longer matches what was built; refused, nothing moves.
      const build = first["build"]
      const otherChain = { ...build.typedData, domain: { ...build.typedData.domain, chainId: net.chainId + 1 } }
      const signedElsewhere = yield* Effect.promise(() => privateKeyToAccount(agentA.key).signTypedData(otherChain))
      const moved = yield* refusedCall(a, "submit_signed_action", { userOp: { ...build.userOp, chainId: net.chainId + 1, signature: signedElsewhere } })
      assert.include(["bad_request", "not_found"], moved.code, moved.message)
      // Its build with that signature: relayed as built, and the EntryPoint refuses the signature (AA24); nothing executes.
      const wrongSig = yield* ok(a, "submit_signed_action", { userOp: { ...build.userOp, signature: signedElsewhere } })
      assert.deepStrictEqual([wrongSig["status"], wrongSig["receipt"].outcome], ["failed", "rejected"], JSON.stringify(wrongSig))
      assert.include(wrongSig["receipt"].reason, "AA24")
      assert.strictEqual(yield* usdcBalance(carol), 0n, "nothing moved to the allowlisted recipient")
      assert.strictEqual(yield* usdcBalance(mallory), 0n)
      assert.strictEqual(yield* usdcBalance(agentA.account.address as Hex), 0n)
      assert.deepStrictEqual(yield* rowsOf(gB.id), bBefore, "still nothing of B's changed")
    }), { timeout: 240_000 })
})
