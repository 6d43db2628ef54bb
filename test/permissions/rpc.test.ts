/**
 * The JSON-RPC layer of the wallet endpoint (src/permissions/JsonRpc.ts, Rpc.ts) above the
 * approvals: how a call is read, and how each outcome of the owner's decision is answered
 * (EIP-1474 / EIP-1193 codes). The approvals here are a fake of what sits below; the real flow,
 * with the kit as the client on the local chain, is endpoint.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Approvals } from "../../src/permissions/Approvals.ts"
import type { PermissionApproval } from "../../src/permissions/Domain.ts"
import type { Granted } from "../../src/permissions/Granted.ts"
import { readCall } from "../../src/permissions/JsonRpc.ts"
import { PermissionRefused } from "../../src/permissions/Permissions.ts"
import { makeRpc } from "../../src/permissions/Rpc.ts"

const signer = { address: "0x00000000000000000000000000000000000000aa", sessionId: "ses_1", sessionExpiresAt: new Date(0) } as const
const approvalOf = (status: PermissionApproval["status"], extra: Partial<PermissionApproval> = {}): PermissionApproval => ({
  id: "pap_1",
  kind: "grant",
  status,
  createdAt: "2026-01-01T00:00:00.000Z",
  expiresAt: "2026-01-01T00:10:00.000Z",
  ...extra
})

/** An Rpc over approvals that decide as told, recording what was asked. */
const rpcWith = (decision: PermissionApproval, options: { refuse?: PermissionRefused; revoked?: boolean } = {}) => {
  const asked: Array<string> = []
  const approvals = {
    request: (_: unknown, params: ReadonlyArray<unknown>) => {
      asked.push(`request ${params.length}`)
      return options.refuse === undefined ? Effect.succeed(approvalOf("pending")) : Effect.fail(options.refuse)
    },
    revoke: (_: unknown, context: string) => {
      asked.push(`revoke ${context}`)
      return Effect.succeed(options.revoked === true
        ? { _tag: "AlreadyRevoked" as const, delegationId: "dlg_1" }
        : { _tag: "Offered" as const, approval: approvalOf("pending", { kind: "revoke" }) })
    },
    awaitDecision: () => Effect.succeed(decision)
  } as unknown as Approvals
  const granted = { supported: Effect.succeed({}), granted: () => Effect.succeed([]) } as unknown as Granted
  return { rpc: makeRpc(approvals, granted, Duration.seconds(1)), asked }
}

const request = { jsonrpc: "2.0", id: 1, method: "wallet_requestExecutionPermissions", params: [{ chainId: "0x7a69" }] } as const

describe("reading a call", () => {
  const cases: ReadonlyArray<readonly [string, unknown, number, string]> = [
    ["a batch", [request], -32600, "body"],
    ["not an object", "hello", -32600, "body"],
    ["no id (a notification)", { jsonrpc: "2.0", method: "wallet_getSupportedExecutionPermissions" }, -32600, "id"],
    ["an id that is an object", { ...request, id: { a: 1 } }, -32600, "id"],
    ["an id with NUL", { ...request, id: "a\u0000" }, -32600, "id"],
    ["jsonrpc 1.0", { ...request, jsonrpc: "1.0" }, -32600, "jsonrpc"],
    ["another method", { ...request, method: "eth_sign" }, -32601, "method"],
    ["params a string", { ...request, params: "x" }, -32600, "params"],
    ["an unpaired surrogate in params", { ...request, params: [{ chainId: "\uD800" }] }, -32602, "params[0].chainId"]
  ]
  for (const [what, body, code, field] of cases) {
    it(what, () => {
      const call = readCall(body as never)
      assert.strictEqual(call._tag, "Invalid")
      if (call._tag === "Invalid") assert.deepStrictEqual([call.error.code, (call.error.data as { field: string }).field], [code, field])
    })
  }
  it("a call", () => {
    assert.deepStrictEqual(readCall(request as never), { _tag: "Call", id: 1, method: request.method, params: request.params as never })
  })
})

describe("the owner's decision, answered", () => {
  it.effect("granted: the standard responses", () =>
    Effect.gen(function*() {
      const permissions = [{ context: "0x01" }] as never
      const { rpc } = rpcWith(approvalOf("granted", { permissions }))
      assert.deepStrictEqual(yield* rpc(signer, request as never), { jsonrpc: "2.0", id: 1, result: [{ context: "0x01" }] })
    }))

  it.effect("not answered within the wait: -32002 with the approval to read later", () =>
    Effect.gen(function*() {
      const { rpc } = rpcWith(approvalOf("pending"))
      const answer = yield* rpc(signer, request as never)
      assert.strictEqual(answer.error?.code, -32002)
      assert.deepStrictEqual(answer.error?.data, { approvalId: "pap_1", status: "pending", expiresAt: "2026-01-01T00:10:00.000Z" })
    }))

  it.effect("rejected or expired: 4001; approved but not executed: -32003 with the failure", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* rpcWith(approvalOf("rejected")).rpc(signer, request as never)).error?.code, 4001)
      assert.strictEqual((yield* rpcWith(approvalOf("expired")).rpc(signer, request as never)).error?.code, 4001)
      const failed = yield* rpcWith(approvalOf("failed", { failure: "reverted" })).rpc(signer, request as never)
      assert.strictEqual(failed.error?.code, -32003)
      assert.include(failed.error!.message, "reverted")
    }))

  it.effect("a refusal: -32602 naming params[i] and what is supported", () =>
    Effect.gen(function*() {
      const refuse = new PermissionRefused({ index: 0, field: "permission.type", message: "unknown type", supported: { "erc20-token-periodic": { chainIds: ["0x7a69"], ruleTypes: ["expiry"] } } })
      const answer = yield* rpcWith(approvalOf("granted"), { refuse }).rpc(signer, request as never)
      assert.strictEqual(answer.error?.code, -32602)
      assert.deepStrictEqual(answer.error?.data, { field: "params[0].permission.type", supported: { "erc20-token-periodic": { chainIds: ["0x7a69"], ruleTypes: ["expiry"] } } })
    }))

  it.effect("params checked before anything is asked: the reads take none, a request takes a list, a revoke { permissionContext }", () =>
    Effect.gen(function*() {
      const { rpc, asked } = rpcWith(approvalOf("revoked"))
      const call = (method: string, params: unknown) => rpc(signer, { jsonrpc: "2.0", id: 2, method, params } as never)
      assert.strictEqual((yield* call("wallet_getSupportedExecutionPermissions", [1])).error?.code, -32602)
      assert.strictEqual((yield* call("wallet_getGrantedExecutionPermissions", { a: 1 })).error?.code, -32602)
      assert.deepStrictEqual((yield* call("wallet_getGrantedExecutionPermissions", [])).result, [])
      assert.strictEqual((yield* call("wallet_requestExecutionPermissions", { chainId: "0x1" })).error?.code, -32602)
      const noContext = yield* call("wallet_revokeExecutionPermission", [{ permissionContext: "0xabc" }])
      assert.deepStrictEqual([noContext.error?.code, (noContext.error?.data as { field: string }).field], [-32602, "params[0].permissionContext"])
      assert.deepStrictEqual(asked, [], "nothing was asked of the approvals")
      assert.deepStrictEqual((yield* call("wallet_revokeExecutionPermission", { permissionContext: "0xabcd" })).result, {})
      assert.deepStrictEqual((yield* call("wallet_revokeExecutionPermission", [{ permissionContext: "0xabcd" }])).result, {})
      assert.deepStrictEqual(asked, ["revoke 0xabcd", "revoke 0xabcd"])
    }))

  it.effect("an already revoked grant: {} at once, nothing waits", () =>
    Effect.gen(function*() {
      const { rpc } = rpcWith(approvalOf("pending"), { revoked: true })
      const answer = yield* rpc(signer, { jsonrpc: "2.0", id: "r", method: "wallet_revokeExecutionPermission", params: { permissionContext: "0xabcd" } } as never)
      assert.deepStrictEqual(answer, { jsonrpc: "2.0", id: "r", result: {} })
    }))
})
