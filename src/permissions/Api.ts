/**
 * The ERC-7715 contract (server-free): the four wallet methods as one JSON-RPC 2.0 endpoint
 * (`POST /wallet`) and as HTTP twins under the session bearer, and the approvals the owner's
 * wallet completes with its signatures. docs/permissions.md.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  OutOfScopeError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { HexString, Id } from "../domain/Primitives.ts"
import {
  ApprovalSignatures,
  ApprovalStatus,
  JsonRpcResponse,
  MAX_REQUESTS,
  PermissionApproval,
  PermissionRequest,
  PermissionResponse,
  SupportedPermissions
} from "./Domain.ts"

const upstream = [ServiceUnavailableError, UpstreamUnavailableError, UpstreamTimeoutError] as const
const approvalId = { approvalId: Id }

/** A dApp's request as the kit sends it (a native allowance that renews daily; any served chain and delegate). */
const exampleRequest = {
  chainId: "0x7a69",
  to: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
  permission: {
    type: "native-token-periodic",
    isAdjustmentAllowed: false,
    data: { periodAmount: "0x2386f26fc10000", periodDuration: 86400, justification: "Pay for my subscription" }
  },
  rules: []
}
/** A permission context (one delegation, ABI `Delegation[]`) as `context` carries it. */
const exampleContext = "0x" +
  "0000000000000000000000000000000000000000000000000000000000000020" +
  "0000000000000000000000000000000000000000000000000000000000000001" +
  "0000000000000000000000000000000000000000000000000000000000000020" +
  "00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8" +
  "0000000000000000000000003c44cdddb6a900fa2b585dd299e03d12fa4293bc" +
  "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" +
  "00000000000000000000000000000000000000000000000000000000000000c0" +
  "0000000000000000000000000000000000000000000000000000000000000001" +
  "00000000000000000000000000000000000000000000000000000000000000e0" +
  "0000000000000000000000000000000000000000000000000000000000000000" +
  "0000000000000000000000000000000000000000000000000000000000000000"

const RpcRequest = Schema.Json.annotate({
  title: "JsonRpcRequest",
  description: "One JSON-RPC 2.0 call: `{ jsonrpc: \"2.0\", id, method, params }` (no batches, no notifications).",
  examples: [
    { jsonrpc: "2.0", id: 1, method: "wallet_getSupportedExecutionPermissions", params: [] },
    { jsonrpc: "2.0", id: 2, method: "wallet_getGrantedExecutionPermissions", params: [] },
    { jsonrpc: "2.0", id: 3, method: "wallet_requestExecutionPermissions", params: [exampleRequest] },
    { jsonrpc: "2.0", id: 4, method: "wallet_revokeExecutionPermission", params: { permissionContext: exampleContext } }
  ]
})

const RequestBody = Schema.Struct({
  requests: Schema.Array(PermissionRequest).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_REQUESTS))
}).annotate({ identifier: "PermissionRequests", examples: [{ requests: [exampleRequest] }] })

/** An agent's ask: the owner's account (`from`), the agent (`to`), and why. */
const AskBody = Schema.Struct({ request: PermissionRequest }).annotate({
  identifier: "PermissionAsk",
  examples: [{
    request: {
      chainId: "0x7a69",
      from: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
      to: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
      permission: {
        type: "erc20-token-periodic",
        isAdjustmentAllowed: false,
        data: {
          tokenAddress: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
          periodAmount: "0x1312d00",
          periodDuration: 604800,
          justification: "Weekly data feeds for the research task"
        }
      }
    }
  }]
})

const RevokeBody = Schema.Struct({ permissionContext: HexString }).annotate({
  identifier: "RevokeExecutionPermission",
  examples: [{ permissionContext: exampleContext }]
})

const Signatures = ApprovalSignatures.annotate({
  examples: [{
    signatures: [{
      userOp: {
        sender: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
        nonce: "0",
        callData: "0xe9ae5c53",
        callGasLimit: "200000",
        verificationGasLimit: "300000",
        preVerificationGas: "60000",
        maxFeePerGas: "2000000000",
        maxPriorityFeePerGas: "1000000000",
        signature: `0x${"11".repeat(65)}`,
        entryPoint: "0x0000000071727de22e5e9d8baf0edac6f37da032",
        chainId: 31337
      },
      userOpHash: `0x${"22".repeat(32)}`,
      delegationSignatures: [{ permissionId: `0x${"33".repeat(32)}`, signature: `0x${"44".repeat(65)}` }]
    }]
  }]
})

const doc = (summary: string, description: string) => OpenApi.annotations({ summary, description })

export class PermissionsApi extends HttpApiGroup.make("permissions")
  .add(
    HttpApiEndpoint.post("rpc", "/wallet", {
      payload: RpcRequest,
      success: JsonRpcResponse,
      error: [BadRequestError, TooManyRequestsError]
    }).annotateMerge(doc(
      "ERC-7715 over JSON-RPC 2.0",
      "The four ERC-7715 wallet methods for a wallet to proxy: `wallet_requestExecutionPermissions`, " +
        "`wallet_getSupportedExecutionPermissions`, `wallet_getGrantedExecutionPermissions`, `wallet_revokeExecutionPermission`. " +
        "Caller: the owner's session (the wallet forwards its dApp's call with it). Every answer is a JSON-RPC response with HTTP 200: " +
        "`error.code` as EIP-1474/EIP-1193 define (-32600 a batch, a missing id or a wrong envelope; -32601 another method; -32602 " +
        "a request the chain cannot hold exactly, with `data.field` and what is supported; -32001 an unknown permission context; " +
        "4001 rejected or expired; -32002 not answered yet; -32003 approved but not executed). A request or revoke waits " +
        "(`PERMISSIONS_APPROVAL_WAIT`, default 5 min) for the owner's wallet to approve it (`POST /permissions/approvals/{id}/approve`) " +
        "and then answers the standard result. On chain: approving a request relays the owner's enable operation (deploys the " +
        "account if needed); approving a revoke relays the sponsored `disableDelegation`; the reads change nothing."
    )),
    HttpApiEndpoint.post("request", "/permissions/request", {
      payload: RequestBody,
      success: PermissionApproval.pipe(HttpApiSchema.status(201)),
      error: [BadRequestError, NotFoundError, OutOfScopeError, TooManyRequestsError, ...upstream]
    }).annotateMerge(doc(
      "Request execution permissions (wallet_requestExecutionPermissions)",
      "Takes ERC-7715 permission requests (`@metamask/7715-permission-types`) and answers the approval the owner signs: per " +
        "request, the request as it will be granted and what `POST /delegations/build` answers (policy, a summary stating only " +
        "what the chain enforces, the unsigned enable operation, its simulation, the delegation's typed data). Caller: the owner's " +
        "session. A request the chain cannot hold exactly is a 400 naming the field (`details.field`) and listing what is supported; " +
        "nothing is stored then. Nothing changes on chain until the owner approves."
    )),
    HttpApiEndpoint.post("ask", "/permissions/asks", {
      payload: AskBody,
      success: PermissionApproval.pipe(HttpApiSchema.status(201)),
      error: [BadRequestError, NotFoundError, ConflictError, OutOfScopeError, TooManyRequestsError, ...upstream]
    }).annotateMerge(doc(
      "An agent asks its owner for a new permission",
      "Caller: the agent's session. One ERC-7715 permission request whose `from` is the account of an owner that granted this " +
        "agent before (any other account: 404) and whose `to` is the agent itself (its key, or one of its accounts on that " +
        "chain: else 400 `request.to`), with a `permission.data.justification` (required, at most 280 characters, quoted as " +
        "the requester's words). Checked as `POST /permissions/request` checks a dApp's request (400 naming `request.<field>`), " +
        "and no amount above 1,000,000,000 whole tokens. One pending ask per agent and owner (409 with `details.approvalId`). " +
        "Answers the owner's approval (`requestedBy`: the agent), which the owner's wallet finds at `GET /permissions/approvals` " +
        "and signs (`POST /permissions/approvals/{id}/approve`) or rejects; the owner is notified. Nothing is granted and " +
        "nothing changes on chain until the owner signs."
    )),
    HttpApiEndpoint.get("asked", "/permissions/asks/:approvalId", {
      params: approvalId,
      success: PermissionApproval,
      error: [BadRequestError, NotFoundError, ...upstream]
    }).annotateMerge(doc(
      "An agent's ask as it stands",
      "Caller: the agent that asked (anyone else: 404). `pending`, `granted` (with `permissions`: the standard response and its " +
        "permission `context`, and `grants[0].delegationId` to act under), `rejected`, `expired` or `failed`. Changes nothing."
    )),
    HttpApiEndpoint.get("supported", "/permissions/supported", {
      success: SupportedPermissions,
      error: [BadRequestError]
    }).annotateMerge(doc(
      "Supported execution permissions (wallet_getSupportedExecutionPermissions)",
      "Per permission type, the served chains whose deployed enforcers hold it exactly and the rule types it may carry. " +
        "Caller: any session. Reads nothing on chain beyond the configured deployments; changes nothing."
    )),
    HttpApiEndpoint.get("granted", "/permissions/granted", {
      success: Schema.Array(PermissionResponse),
      error: [BadRequestError, ...upstream]
    }).annotateMerge(doc(
      "Granted execution permissions (wallet_getGrantedExecutionPermissions)",
      "The caller's grants that can still be redeemed (not revoked, not expired), on every served chain and account, in the " +
        "standard's shape with their permission `context`. A grant the standard cannot state exactly is left out (the service's " +
        "own `GET /delegations` lists it). Caller: the owner's session. Reads whether each account is deployed; changes nothing."
    )),
    HttpApiEndpoint.post("revoke", "/permissions/revoke", {
      payload: RevokeBody,
      success: PermissionApproval.pipe(HttpApiSchema.status(201)),
      error: [BadRequestError, NotFoundError, ConflictError, OutOfScopeError, ...upstream]
    }).annotateMerge(doc(
      "Revoke an execution permission (wallet_revokeExecutionPermission)",
      "Decodes the permission context to its grant (the root delegation's hash) and answers the approval carrying the " +
        "gasless revoke build the owner signs (then `POST /permissions/approvals/{id}/approve`). Caller: the owner's session; " +
        "a context of anyone else's grant is a 404, an already revoked grant a 409. On chain, once approved: the owner's " +
        "account calls `disableDelegation`, sponsored; every later redemption of the context reverts."
    )),
    HttpApiEndpoint.get("approvals", "/permissions/approvals", {
      query: { status: Schema.optionalKey(ApprovalStatus) },
      success: Schema.Array(PermissionApproval),
      error: [BadRequestError, ...upstream]
    }).annotateMerge(doc(
      "Permission approvals",
      "The caller's permission requests and revokes, newest first (the last 100), with what each needs signed; " +
        "`?status=pending` is what waits for the owner's wallet. Caller: the owner's session. Changes nothing."
    )),
    HttpApiEndpoint.get("approval", "/permissions/approvals/:approvalId", {
      params: approvalId,
      success: PermissionApproval,
      error: [BadRequestError, NotFoundError, ...upstream]
    }).annotateMerge(doc(
      "One permission approval",
      "The approval with its status; once granted, the standard responses (`permissions`). Caller: its owner. Changes nothing."
    )),
    HttpApiEndpoint.post("approve", "/permissions/approvals/:approvalId/approve", {
      params: approvalId,
      payload: Signatures,
      success: PermissionApproval,
      error: [BadRequestError, NotFoundError, ConflictError, OutOfScopeError, ...upstream]
    }).annotateMerge(doc(
      "Approve with the owner's signatures",
      "The owner's signatures, one entry per grant in order: the enable operation signed (its `typedData`) and the EIP-712 " +
        "signature of each delegation; for a revoke, the signed revoke operation. Every signature is checked before anything " +
        "is relayed. Caller: the owner. On chain: each grant's enable operation (or the revoke) is relayed; the answer is the " +
        "approval as it then is (`granted` with `permissions`, or `revoked`); a 504 means relayed but not executed yet: repeat it."
    )),
    HttpApiEndpoint.post("reject", "/permissions/approvals/:approvalId/reject", {
      params: approvalId,
      success: PermissionApproval,
      error: [BadRequestError, NotFoundError, ConflictError, ...upstream]
    }).annotateMerge(doc(
      "Reject",
      "The owner says no: a pending approval becomes `rejected` and a waiting JSON-RPC call answers 4001. Caller: the owner. " +
        "Changes nothing on chain; one already being approved cannot be rejected (409)."
    ))
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({
    title: "Permissions",
    description: "ERC-7715 execution permissions in, ERC-7710 permission contexts out (docs/permissions.md)."
  }))
{}
