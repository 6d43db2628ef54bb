/**
 * Approval requests (beyond the contract; issue 25, docs/approvals.md): the owner's, the
 * approvers' and the agent's view of actions held back by a grant's approval rule. Server-free.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  OutOfScopeError,
  ServiceUnavailableError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { ApprovalId, ApprovalRequest, ApprovalStatus } from "../domain/Approvals.ts"
import { UserOpBuild } from "../domain/Operations.ts"
import { Address, HexString, TextOfLength } from "../domain/Primitives.ts"

const approvalId = { approvalId: ApprovalId }
const common = [BadRequestError, NotFoundError, ConflictError, ServiceUnavailableError, UpstreamUnavailableError, UpstreamTimeoutError] as const

export class ApprovalsApi extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("list", "/approvals", {
      query: { status: Schema.optionalKey(ApprovalStatus) },
      success: Schema.Array(ApprovalRequest),
      error: common
    }).annotate(OpenApi.Description, "The requests the signer owns, may approve, or asked for as the agent (newest first, at most 200)."),
    HttpApiEndpoint.get("get", "/approvals/:approvalId", {
      params: approvalId,
      success: ApprovalRequest,
      error: common
    }).annotate(OpenApi.Description, "One request with the EIP-712 data each approver signs (`toSign`). Anyone else's is a 404."),
    HttpApiEndpoint.post("approve", "/approvals/:approvalId/approve", {
      params: approvalId,
      payload: Schema.Struct({
        /** `eth_signTypedData_v4` of `toSign` by the approver (65-byte ECDSA, or what its account's ERC-1271 accepts). */
        signature: HexString.check(Schema.isMaxLength(4098)),
        /** Whose signature it is (default: the caller's own address or account that is a named approver). */
        approver: Schema.optionalKey(Address)
      }),
      success: ApprovalRequest,
      error: common
    }).annotate(
      OpenApi.Description,
      "Adds one approver's signature, checked as the ApprovalEnforcer will (400 naming `signature` otherwise). At `required` approvals the request is `approved`. 409 once settled."
    ),
    HttpApiEndpoint.post("deny", "/approvals/:approvalId/deny", {
      params: approvalId,
      payload: Schema.Struct({ reason: TextOfLength(1, 500) }),
      success: ApprovalRequest,
      error: common
    }).annotate(OpenApi.Description, "The owner or any approver denies a pending request: it never executes and its budget is free again. 409 once settled."),
    HttpApiEndpoint.post("build", "/approvals/:approvalId/build", {
      params: approvalId,
      success: UserOpBuild,
      error: [...common, OutOfScopeError]
    }).annotate(
      OpenApi.Description,
      "The agent's operation for an approved request, its approvals attached: sign and relay it with POST /userops. Asked again, the same open build."
    )
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Approvals", description: "Approvals above a threshold (docs/approvals.md)." }))
{}
