/**
 * The ERC-7715 wire (types of `@metamask/7715-permission-types`) and the service's approvals, as
 * Schemas. A permission request is typed only as far as its outline (strings, a boolean, JSON
 * objects): its fields are checked one by one by `decodeRequest` (Wire.ts), which names the field
 * and lists what is supported, the same for the HTTP twin and the JSON-RPC endpoint.
 * docs/permissions.md.
 */
import { Schema } from "effect"
import { BasketSpent, DelegationBuild, DelegationSignature } from "../delegations/Domain.ts"
import { SignedUserOp, UserOpBuild } from "../domain/Operations.ts"
import { Address, ChainId, Hash32, HexString, Timestamp } from "../domain/Primitives.ts"

/** Most permission requests one call may carry (each is a grant of its own, built and signed). */
export const MAX_REQUESTS = 8

export const Erc7715Permission = Schema.Struct({
  type: Schema.String,
  isAdjustmentAllowed: Schema.Boolean,
  data: Schema.JsonObject
}).annotate({ identifier: "Erc7715Permission" })

export const Erc7715Rule = Schema.Struct({ type: Schema.String, data: Schema.JsonObject }).annotate({ identifier: "Erc7715Rule" })

/** `PermissionRequest` of ERC-7715: amounts are hex quantities in base units, times whole seconds. */
export const PermissionRequest = Schema.Struct({
  chainId: Schema.String,
  from: Schema.optionalKey(Schema.NullOr(Schema.String)),
  to: Schema.String,
  permission: Erc7715Permission,
  rules: Schema.optionalKey(Schema.NullOr(Schema.Array(Erc7715Rule)))
}).annotate({ identifier: "PermissionRequest" })

/**
 * A field the grant holds other than the request asked: made only when the request said
 * `isAdjustmentAllowed: true` (with `false` such a request is refused naming the field).
 */
export const PermissionAdjustment = Schema.Struct({
  /** The request's field, e.g. `permission.data.maxAmount`. */
  field: Schema.String,
  /** As asked and as granted, in the wire's form (hex base units for amounts). */
  requested: Schema.String,
  granted: Schema.String,
  reason: Schema.String
}).annotate({ identifier: "PermissionAdjustment" })
export type PermissionAdjustment = typeof PermissionAdjustment.Type

/** `PermissionResponse` of ERC-7715: the request as granted, the permission context and what redeeming it needs. */
export const PermissionResponse = Schema.Struct({
  chainId: Schema.String,
  from: Address,
  to: Address,
  permission: Erc7715Permission,
  rules: Schema.optionalKey(Schema.NullOr(Schema.Array(Erc7715Rule))),
  /** ERC-7710 permission context: ABI `Delegation[]`, the signed grant with the caveat args every redemption uses. */
  context: HexString,
  /** Factory calls for accounts not yet deployed (empty once the owner's account is on chain). */
  dependencies: Schema.Array(Schema.Struct({ factory: Address, factoryData: HexString })),
  delegationManager: Address,
  /** What was granted differently from the request (beyond the standard; only when the request allowed adjustment). */
  adjustments: Schema.optionalKey(Schema.Array(PermissionAdjustment)),
  /** Beyond the standard, on `erc20-basket-periodic` in the granted list: the basket's spent and left in USD (as `basketToDate` of the grant). */
  basketToDate: Schema.optionalKey(BasketSpent)
}).annotate({ identifier: "PermissionResponse" })
export type PermissionResponse = typeof PermissionResponse.Type

/** `wallet_getSupportedExecutionPermissions`: per type, the chains (hex) and the rule types this deployment holds on chain. */
export const SupportedPermissions = Schema.Record(
  Schema.String,
  Schema.Struct({ chainIds: Schema.Array(Schema.String), ruleTypes: Schema.Array(Schema.String) })
).annotate({ identifier: "SupportedPermissions" })

export const ApprovalStatus = Schema.Literals(["pending", "approving", "granted", "revoked", "rejected", "expired", "failed"]).annotate({
  identifier: "PermissionApprovalStatus"
})
export type ApprovalStatus = typeof ApprovalStatus.Type

/** One grant of a request: the request as it will be granted, and what the owner signs for it. */
export const GrantToApprove = Schema.Struct({
  /** The request as granted: the data with its defaults, the rules the grant holds (expiry, redeemer, payee). */
  request: PermissionRequest,
  /** What `POST /delegations/build` answers: policy, summary, the unsigned enable, its simulation, the delegation to sign. */
  build: DelegationBuild,
  /** What the grant holds differently from the request (only when it allowed adjustment): the owner and the dApp see it. */
  adjustments: Schema.optionalKey(Schema.Array(PermissionAdjustment)),
  /** Once enabling started. */
  delegationId: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "GrantToApprove" })

export const RevokeToApprove = Schema.Struct({
  delegationId: Schema.String,
  permissionId: Hash32,
  chainId: ChainId,
  /** The sponsored (gasless) revoke the owner signs: `typedData` into `userOp.signature`. */
  build: UserOpBuild
}).annotate({ identifier: "RevokeToApprove" })

/**
 * A permission request or revoke waiting for the owner's wallet (docs/permissions.md, "The owner's
 * signatures"): `grants` (kind `grant`) or `revoke` (kind `revoke`) say what to sign; `permissions`
 * are the standard responses once granted.
 */
export const PermissionApproval = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(["grant", "revoke"]),
  status: ApprovalStatus,
  createdAt: Timestamp,
  expiresAt: Timestamp,
  decidedAt: Schema.optionalKey(Timestamp),
  failure: Schema.optionalKey(Schema.String),
  grants: Schema.optionalKey(Schema.Array(GrantToApprove)),
  revoke: Schema.optionalKey(RevokeToApprove),
  permissions: Schema.optionalKey(Schema.Array(PermissionResponse)),
  /** An agent's ask (`POST /permissions/asks`): the agent that asked. Absent for the owner's own (a dApp's) requests. */
  requestedBy: Schema.optionalKey(Address)
}).annotate({ identifier: "PermissionApproval" })
export type PermissionApproval = typeof PermissionApproval.Type

/** The owner's signatures, one entry per grant of the approval (in order), or the one revoke. */
export const ApprovalSignatures = Schema.Struct({
  signatures: Schema.Array(Schema.Struct({
    /** The build's `enableUserOp` (or revoke `userOp`) with the owner's signature of its `typedData`. */
    userOp: SignedUserOp,
    userOpHash: Hash32,
    /** A grant only: the owner's EIP-712 signature of `build.delegations[i].typedData`. */
    delegationSignatures: Schema.optionalKey(Schema.Array(DelegationSignature))
  })).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_REQUESTS))
}).annotate({ identifier: "ApprovalSignatures" })
export type ApprovalSignatures = typeof ApprovalSignatures.Type

// ---------------------------------------------------------------------------------------
// JSON-RPC 2.0

export const JsonRpcId = Schema.Union([Schema.String, Schema.Number, Schema.Null])

export const JsonRpcError = Schema.Struct({
  code: Schema.Int,
  message: Schema.String,
  /** `field`: the request's field at fault (`params[0].permission.data.periodAmount`), and what is supported. */
  data: Schema.optionalKey(Schema.Json)
}).annotate({ identifier: "JsonRpcError" })
export type JsonRpcError = typeof JsonRpcError.Type

/** One JSON-RPC 2.0 answer: `result` or `error` (always HTTP 200; the session's own 401 aside). */
export const JsonRpcResponse = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: JsonRpcId,
  result: Schema.optionalKey(Schema.Json),
  error: Schema.optionalKey(JsonRpcError)
}).annotate({ identifier: "JsonRpcResponse" })
export type JsonRpcResponse = typeof JsonRpcResponse.Type
