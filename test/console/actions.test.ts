/**
 * Every state-changing request the console page makes (src/console/web/store.ts, session.ts), sent
 * as an attacker would (h48d item 2), against the real service: with no session; as a cross-site
 * form (another site's Origin, `Sec-Fetch-Site: cross-site`, a form's content type, no bearer: the
 * console's session is a bearer token the page holds, never a cookie, so a forged form or fetch
 * from another site carries none); and with another owner's own valid session naming the victim's
 * grant, account, approval request, change request and delegation hash. Each is refused (401
 * without a session; with the attacker's session a 4xx naming nothing of the victim's: its
 * owner's, agent's and approver's addresses stay out of every answer), no answer opens the API to
 * another origin (no `Access-Control-Allow-Origin`, a preflight from another site allowed nothing),
 * and nothing of the victim's changes: the grant still active, the account not frozen, its
 * rules, the approval request and the change request pending and unsigned, no build, no audit entry.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { failure, newSession } from "../delegations/helpers.ts"
import { approvalGrant, keyAddress, randomAddress } from "../approvals/support.ts"
import { mint } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const EVIL = "https://evil.example"

/** What the service holds for the victim's account: builds, audit entries, account rows, approvals and their signatures, change requests. */
const victimRows = (accountId: string, grantId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [r] = yield* sql<Record<string, string>>`
      SELECT
        (SELECT count(*)::text FROM op_builds WHERE account_id = ${accountId}) AS builds,
        (SELECT count(*)::text FROM audit_entries WHERE account_id = ${accountId}) AS audit,
        (SELECT row_to_json(a)::text FROM accounts a WHERE id = ${accountId}) AS account,
        (SELECT status FROM delegations WHERE id = ${grantId}) AS grant_status,
        (SELECT coalesce(string_agg(id || ':' || status, ',' ORDER BY id), '') FROM approval_requests WHERE delegation_id = ${grantId}) AS approvals,
        (SELECT count(*)::text FROM approval_signatures s JOIN approval_requests r ON r.id = s.request_id WHERE r.delegation_id = ${grantId}) AS signatures,
        (SELECT coalesce(string_agg(id || ':' || status, ',' ORDER BY id), '') FROM grant_change_requests WHERE delegation_id = ${grantId}) AS changes,
        (SELECT count(*)::text FROM owner_recovery_delegations WHERE account_id = ${accountId}) AS account_delegations`
    return r!
  }).pipe(Effect.orDie)

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("the console's actions, sent by an attacker", (it) => {
  it.effect("no session, a cross-site form, another owner's session with the victim's ids: refused, nothing of the victim's changed", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const [victim, agent, approver, mallory] = yield* Effect.all([newSession(), newSession(), newSession(), newSession()])
      yield* mint("usd", victim.account.address as Hex, 50)
      const g = yield* approvalGrant(victim, agent, 20, { required: 1, approvers: [keyAddress(approver)], thresholds: [{ token: { symbol: "USDC" }, amount: 5 }] })
      const held = yield* failure(agent.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: randomAddress(), amount: 12 } }))
      const approvalId = held.details["approvalId"] as string
      assert.match(approvalId, /^apr_/)
      const change = yield* agent.api.approvals.askChange({ payload: { delegationId: g.id, changes: { maxActions: 30 }, reason: "more runs" } })
      const permissionId = (yield* victim.api.delegations.get({ params: { delegationId: g.id } })).permissionId
      const accountId = victim.account.id
      const malloryToken = (yield* signIn(baseUrl, privateKeyToAccount(mallory.key))).token
      const signature = `0x${"11".repeat(65)}`
      // A well-formed operation (the attacker's own grant's enable build), so the refusals below are about whose ids they are.
      const own = yield* mallory.api.delegations.build({
        payload: { name: "mine", kind: "agent", delegateeAddress: randomAddress(), chainId: net.chainId, budgets: [{ token: { symbol: "USDC" }, amount: 1 }], maxActions: 1 }
      })
      const wellFormed = { userOp: own.enableUserOp, userOpHash: own.userOpHash, delegationSignatures: [{ permissionId, signature }] }

      // What the console posts, with the victim's ids (store.ts, session.ts).
      const requests: ReadonlyArray<readonly [string, Record<string, unknown> | undefined]> = [
        [`/delegations/${g.id}/revoke`, undefined],
        ["/account/rules/build", { intentType: "account_freeze", accountId }],
        ["/account/rules/build", { intentType: "account_unfreeze", accountId }],
        ["/account/rules/build", { intentType: "rules_update", accountId, change: { kind: "safe_address", address: mallory.account.address } }],
        ["/account/rules/build", { intentType: "guardian_add", accountId, guardians: [{ address: keyAddress(mallory) }], threshold: 1 }],
        ["/account/rules/build", { intentType: "panic_install", accountId, delegationHash: permissionId }],
        ["/account/rules/delegations/build", { accountId }],
        ["/account/rules/delegations/sign", { delegationHash: permissionId, signature }],
        [`/approvals/${approvalId}/approve`, { signature }],
        [`/approvals/${approvalId}/deny`, { reason: "denied by mallory" }],
        [`/approvals/changes/${change.id}/build`, undefined],
        [`/approvals/changes/${change.id}/accept`, wellFormed],
        [`/approvals/changes/${change.id}/decline`, { reason: "declined by mallory" }],
        ["/delegations/build", { name: "drain", kind: "agent", delegateeAddress: mallory.account.address, chainId: net.chainId, accountId, budgets: [{ token: { symbol: "USDC" }, amount: 50 }] }],
        // Enabling a grant with the victim's delegation hash as the permission signed.
        ["/delegations", { intentType: "delegation_enable", ...wellFormed }]
      ]
      const before = yield* victimRows(accountId, g.id)
      const secrets = [victim.account.address, keyAddress(victim), agent.account.address, keyAddress(agent), keyAddress(approver)].map((s) => s.toLowerCase())

      const send = (path: string, init: RequestInit) =>
        Effect.promise(async () => {
          const r = await fetch(`${baseUrl}${path}`, { method: "POST", ...init })
          return { status: r.status, body: await r.text(), allowOrigin: r.headers.get("access-control-allow-origin") }
        })
      const crossSite = { origin: EVIL, "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", referer: `${EVIL}/win-a-prize` }

      for (const [path, body] of requests) {
        const form = new URLSearchParams(Object.entries(body ?? {}).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString()
        // A cross-site form: another site's Origin, a form's content type, no bearer (a browser attaches none: there is no cookie).
        const csrf = yield* send(path, { headers: { ...crossSite, "content-type": "application/x-www-form-urlencoded" }, body: form })
        assert.strictEqual(csrf.status, 401, `${path} cross-site form: ${csrf.body}`)
        assert.strictEqual(JSON.parse(csrf.body).error.code, "unauthorized", path)
        // text/plain (what a form with enctype text/plain or a no-cors fetch sends) holding JSON: still no session.
        const plain = yield* send(path, { headers: { ...crossSite, "content-type": "text/plain" }, body: JSON.stringify(body ?? {}) })
        assert.strictEqual(plain.status, 401, `${path} text/plain: ${plain.body}`)
        // No session at all, as JSON.
        const bare = yield* send(path, { headers: { "content-type": "application/json" }, body: JSON.stringify(body ?? {}) })
        assert.strictEqual(bare.status, 401, `${path} without a session: ${bare.body}`)
        // Another owner's own valid session, from another site, naming the victim's ids.
        const theirs = yield* send(path, {
          headers: { ...crossSite, authorization: `Bearer ${malloryToken}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        assert.include([400, 403, 404, 409, 422], theirs.status, `${path} ${JSON.stringify(body)} with another owner's session: ${theirs.status} ${theirs.body}`)
        if (path.includes("/accept") || path.includes("/revoke") || path.includes(accountId) || JSON.stringify(body ?? {}).includes(accountId)) {
          assert.strictEqual(theirs.status, 404, `${path}: ${theirs.body}`)
        }
        for (const s of secrets) assert.notInclude(theirs.body.toLowerCase(), s, `${path} names the victim's ${s}: ${theirs.body}`)
        // The same as a form: the content type is not JSON.
        const theirsForm = yield* send(path, { headers: { ...crossSite, authorization: `Bearer ${malloryToken}`, "content-type": "application/x-www-form-urlencoded" }, body: form })
        assert.include([400, 403, 404, 409, 415, 422], theirsForm.status, `${path} as a form with a session: ${theirsForm.body}`)
        for (const answer of [csrf, plain, bare, theirs, theirsForm]) assert.isNull(answer.allowOrigin, `${path}: opened to another origin`)
      }

      // A preflight from another site is allowed nothing: a page there cannot send the bearer or read an answer.
      const preflight = yield* Effect.promise(async () => {
        const r = await fetch(`${baseUrl}/delegations/${g.id}/revoke`, {
          method: "OPTIONS",
          headers: { origin: EVIL, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" }
        })
        await r.arrayBuffer()
        return { allowOrigin: r.headers.get("access-control-allow-origin"), allowHeaders: r.headers.get("access-control-allow-headers") }
      })
      assert.deepStrictEqual(preflight, { allowOrigin: null, allowHeaders: null })

      // Nothing of the victim's changed.
      assert.deepStrictEqual(yield* victimRows(accountId, g.id), before)
      assert.strictEqual((yield* victim.api.delegations.get({ params: { delegationId: g.id } })).status, "active")
      assert.strictEqual((yield* victim.api.approvals.get({ params: { approvalId } })).status, "pending")
      assert.strictEqual((yield* victim.api.approvals.getChange({ params: { changeId: change.id } })).status, "pending")
    }), { timeout: 240_000 })
})
