/**
 * Issue 25's bad input, through HTTP: an approval rule with a threshold above the per-action
 * maximum, m > n, duplicate approvers (in any case) is a 400 naming the field at
 * `POST /delegations/build`, and nothing is stored (no build, no grant, no operation); an
 * approval of a request that does not exist is refused and stores nothing: a malformed id or
 * signature is a 400 naming it, a well-formed unknown id a 404 — as another owner's request
 * answers (docs/decisions.md, "Issue 25: the rest").
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { failure, newSession } from "../delegations/helpers.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { keyAddress, randomAddress } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("approvals: bad input", (it) => {
  it.effect("a rule with a threshold above the per-action maximum, m > n or a repeated approver: 400 naming the field, nothing stored", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const sql = yield* SqlClient.SqlClient
      const [owner, delegate, a1] = yield* Effect.all([newSession(), newSession(), newSession()])
      const a2 = randomAddress()
      const stored = Effect.map(
        sql<{ builds: number; grants: number; ops: number }>`SELECT
          (SELECT count(*)::int FROM delegation_builds WHERE signer_address = ${owner.account.signerAddress.toLowerCase()}) AS builds,
          (SELECT count(*)::int FROM delegations WHERE signer_address = ${owner.account.signerAddress.toLowerCase()}) AS grants,
          (SELECT count(*)::int FROM op_builds WHERE signer_address = ${owner.account.signerAddress.toLowerCase()}) AS ops`,
        (rows) => rows[0]!
      )
      const before = yield* stored
      const build = (approval: { required: number; approvers: ReadonlyArray<string>; thresholds?: ReadonlyArray<{ token: { symbol: string }; amount: number }> }) =>
        failure(owner.api.delegations.build({
          payload: {
            name: "held", kind: "agent", delegateeAddress: delegate.account.address, chainId: net.chainId,
            budgets: [{ token: { symbol: "USDC" }, amount: 50 }],
            perActionMax: { token: { symbol: "USDC" }, amount: 10 },
            maxActions: 5,
            approval
          } as Parameters<typeof owner.api.delegations.build>[0]["payload"]
        }))
      const cases: Array<[string, Parameters<typeof build>[0], string]> = [
        ["a threshold above the per-action maximum", { required: 1, approvers: [keyAddress(a1)], thresholds: [{ token: { symbol: "USDC" }, amount: 11 }] }, "approval.thresholds.0.amount"],
        ["m > n", { required: 3, approvers: [keyAddress(a1), a2] }, "approval.required"],
        ["duplicate approvers", { required: 1, approvers: [keyAddress(a1), a2, keyAddress(a1)] }, "approval.approvers.2"],
        ["duplicate approvers, another case", { required: 1, approvers: [a2, `0x${a2.slice(2).toUpperCase()}`] }, "approval.approvers.1"]
      ]
      for (const [what, rule, field] of cases) {
        const refused = yield* build(rule)
        assert.strictEqual(refused.tag, "BadRequest", what)
        assert.strictEqual(refused.details["field"], field, `${what}: ${refused.message}`)
      }
      assert.deepStrictEqual(yield* stored, before, "nothing stored")
      // The same count sees a good rule's build (so "nothing" above is not a query that sees nothing).
      yield* Effect.flip(build({ required: 1, approvers: [keyAddress(a1)], thresholds: [{ token: { symbol: "USDC" }, amount: 5 }] }))
      assert.strictEqual((yield* stored).builds, before.builds + 1)
    }))

  it.effect("an approval of an unknown request: a malformed id or signature is a 400 naming it, an unknown id a 404; nothing stored", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const a1 = yield* newSession()
      const signature = `0x${"11".repeat(65)}`
      const count = Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM approval_signatures WHERE submitted_by = ${keyAddress(a1)}`, (r) => r[0]!.n)
      const unknown = `apr_${crypto.randomUUID()}`
      for (const attempt of [
        a1.api.approvals.approve({ params: { approvalId: unknown }, payload: { signature } }),
        a1.api.approvals.approve({ params: { approvalId: unknown }, payload: { signature, approver: keyAddress(a1) } })
      ]) {
        assert.strictEqual((yield* failure(attempt)).tag, "NotFound")
      }
      assert.strictEqual((yield* failure(a1.api.approvals.deny({ params: { approvalId: unknown }, payload: { reason: "no" } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(a1.api.approvals.build({ params: { approvalId: unknown } }))).tag, "NotFound")

      // Malformed, straight over HTTP (the typed client would refuse to send them): 400 naming the path or field.
      const token = (yield* signIn(baseUrl, privateKeyToAccount(a1.key))).token
      const post = (path: string, body: unknown) =>
        Effect.promise(async () => {
          const res = await fetch(`${baseUrl}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify(body)
          })
          return { status: res.status, body: (await res.json()) as { error: { code: string; details?: { issues?: Array<{ path: string }> } } } }
        })
      for (const [path, body, failing] of [
        ["/approvals/not-an-id/approve", { signature }, "path.approvalId"],
        [`/approvals/apr_${"0".repeat(8)}/approve`, { signature }, "path.approvalId"],
        [`/approvals/${unknown}/approve`, { signature: "0xnothex" }, "body.signature"],
        [`/approvals/${unknown}/approve`, { signature, approver: "0x1234" }, "body.approver"],
        [`/approvals/${unknown}/approve`, {}, "body"]
      ] as const) {
        const res = yield* post(path, body)
        assert.strictEqual(res.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`)
        assert.strictEqual(res.body.error.code, "bad_request")
        const issues = res.body.error.details?.issues ?? []
        assert.isTrue(issues.some((i) => i.path.startsWith(failing)), `${path}: ${JSON.stringify(issues)}`)
      }
      assert.strictEqual(yield* count, 0, "no approval stored")
    }))
})
