/**
 * The four ERC-7715 methods over JSON-RPC 2.0 (docs/permissions.md, "JSON-RPC"): one call per
 * request, answered with `result` or an `error` whose `data.field` names the field at fault.
 * `wallet_requestExecutionPermissions` and `wallet_revokeExecutionPermission` need the owner's
 * signatures: the call offers an approval (Approvals.ts) and waits, bounded, for the owner's wallet
 * to approve or reject it, then answers the standard result.
 */
import { Duration, Effect, type Schema } from "effect"
import type { Signer } from "../delegations/Reads.ts"
import type { JsonRpcResponse, PermissionApproval } from "./Domain.ts"
import type { Approvals, PermissionRefused } from "./Approvals.ts"
import type { Granted } from "./Granted.ts"
import { answer, asJson, failure, fromServiceError, type Id, readCall, rpcError, RpcCode } from "./JsonRpc.ts"

const refusedAt = (e: PermissionRefused, prefix: string) => {
  const field = e.index === undefined ? (e.field === "" ? prefix : `${prefix}.${e.field}`) : `${prefix}[${e.index}]${e.field === "" ? "" : `.${e.field}`}`
  return rpcError(RpcCode.invalidParams, e.message, asJson({
    field,
    ...(e.supported === undefined ? {} : { supported: e.supported }),
    ...(e.served === undefined ? {} : { served: e.served })
  }))
}

const noParams = (params: Schema.Json | undefined) =>
  params === undefined || (Array.isArray(params) && params.length === 0) ||
  (typeof params === "object" && params !== null && !Array.isArray(params) && Object.keys(params).length === 0)

/** A decided approval as the method's answer; one still open when the wait ended is "not available yet". */
const decided = (id: Id, approval: PermissionApproval, result: Schema.Json): JsonRpcResponse => {
  const data = { approvalId: approval.id, status: approval.status }
  switch (approval.status) {
    case "granted":
    case "revoked":
      return answer(id, result)
    case "rejected":
      return failure(id, rpcError(RpcCode.userRejected, "User rejected the request.", data))
    case "expired":
      return failure(id, rpcError(RpcCode.userRejected, "User rejected the request: the owner did not approve it before it expired.", data))
    case "failed":
      return failure(id, rpcError(RpcCode.transactionRejected, `The owner approved, but ${approval.failure ?? "it did not execute"}`, asJson({ ...data, failure: approval.failure })))
    case "pending":
    case "approving":
      return failure(id, rpcError(
        RpcCode.resourceUnavailable,
        "The owner has not answered yet: the approval stays open until it expires (read wallet_getGrantedExecutionPermissions, or the approval, later)",
        { ...data, expiresAt: approval.expiresAt }
      ))
  }
}

export const makeRpc = (approvals: Approvals, granted: Granted, wait: Duration.Duration) =>
  (signer: Signer, body: Schema.Json): Effect.Effect<JsonRpcResponse> => {
    const call = readCall(body)
    if (call._tag === "Invalid") return Effect.succeed(failure(call.id, call.error))
    const { id, params } = call
    const until = () => new Date(Date.now() + Duration.toMillis(wait))
    const invalidParams = (field: string, message: string) => Effect.succeed(failure(id, rpcError(RpcCode.invalidParams, message, { field })))
    const run = (): Effect.Effect<JsonRpcResponse, { readonly _tag: string; readonly message: string }> => {
      switch (call.method) {
        case "wallet_getSupportedExecutionPermissions":
          if (!noParams(params)) return invalidParams("params", "wallet_getSupportedExecutionPermissions takes no parameters")
          return Effect.map(granted.supported, (s) => answer(id, asJson(s)))
        case "wallet_getGrantedExecutionPermissions":
          if (!noParams(params)) return invalidParams("params", "wallet_getGrantedExecutionPermissions takes no parameters")
          return Effect.map(granted.granted(signer), (g) => answer(id, asJson(g)))
        case "wallet_requestExecutionPermissions": {
          if (!Array.isArray(params)) return invalidParams("params", "params must be the array of permission requests")
          return approvals.request(signer, params).pipe(
            Effect.flatMap((offered) => approvals.awaitDecision(signer, offered.id, until())),
            Effect.map((approval) => decided(id, approval, asJson(approval.permissions ?? []))),
            Effect.catchTag("PermissionRefused", (e) => Effect.succeed(failure(id, refusedAt(e, "params"))))
          )
        }
        case "wallet_revokeExecutionPermission": {
          // `{ permissionContext }` by name (as the standard writes it), or that object alone in an array.
          const byPosition = Array.isArray(params)
          const arg = byPosition ? params[0] : params
          const prefix = byPosition ? "params[0]" : "params"
          const context = typeof arg === "object" && arg !== null && !Array.isArray(arg) ? arg["permissionContext"] : undefined
          if (typeof context !== "string" || !/^0x([0-9a-fA-F]{2})+$/.test(context) || (byPosition && params.length !== 1)) {
            return invalidParams(`${prefix}.permissionContext`, "params must be { permissionContext }: the hex permission context of a grant")
          }
          return approvals.revoke(signer, context).pipe(
            Effect.flatMap((r) =>
              r._tag === "AlreadyRevoked"
                ? Effect.succeed(answer(id, {}))
                : Effect.map(approvals.awaitDecision(signer, r.approval.id, until()), (approval) => decided(id, approval, {}))),
            Effect.catchTag("PermissionRefused", (e) => Effect.succeed(failure(id, refusedAt(e, prefix)))),
            // Spelled out: an error's `message` is not an own property, so a spread would lose it.
            Effect.catchTag("NotFound", (e) =>
              Effect.succeed(failure(id, fromServiceError({ _tag: e._tag, message: e.message, details: { ...e.details, field: `${prefix}.permissionContext` } }))))
          )
        }
      }
    }
    return run().pipe(
      Effect.catch((e) => Effect.succeed(failure(id, fromServiceError(e as Parameters<typeof fromServiceError>[0])))),
      Effect.withSpan("Permissions.rpc", { attributes: { "rpc.method": call.method } })
    )
  }
