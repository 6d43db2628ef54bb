/**
 * Approval requests (beyond the contract; issue 25, docs/approvals.md): the owner's, the
 * approvers' and the agent's view of actions held back by a grant's approval rule. Server-free.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
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
import { DelegationBuild, DelegationSignature } from "../delegations/Domain.ts"
import { ApprovalId, ApprovalRequest, ApprovalStatus, GrantChangeId, GrantChangeRequest, GrantChanges, GrantChangeStatus } from "../domain/Approvals.ts"
import { SignedUserOp, UserOpBuild } from "../domain/Operations.ts"
import { Address, Hash32, HexString, Id, TextOfLength } from "../domain/Primitives.ts"

const approvalId = { approvalId: ApprovalId }

/** A webhook the owner registered for an approver who does not sign in here. */
const ApproverContact = Schema.Struct({
  id: Schema.String,
  approver: Address,
  url: Schema.String,
  createdAt: Schema.String,
  /** Shown once, at creation: verify each delivery's signature with it. */
  secret: Schema.String
}).annotate({ identifier: "ApproverContact" })
const changeId = { changeId: GrantChangeId }
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
    ,
    // Asking for more (issue 25, item 3; docs/approvals.md "Asking for more").
    HttpApiEndpoint.post("askChange", "/approvals/changes", {
      payload: Schema.Struct({ delegationId: Id, changes: GrantChanges, reason: TextOfLength(1, 500) }),
      success: GrantChangeRequest.pipe(HttpApiSchema.status(201)),
      error: common
    }).annotate(
      OpenApi.Description,
      "The agent (the grant's holder) asks its owner to change its grant: new budget totals, per-action maximum, count, expiry or recipients, with a reason. The owner is told. One open request per grant (409 names it)."
    ),
    HttpApiEndpoint.get("listChanges", "/approvals/changes", {
      query: { status: Schema.optionalKey(GrantChangeStatus) },
      success: Schema.Array(GrantChangeRequest),
      error: common
    }).annotate(OpenApi.Description, "The change requests the signer owns or asked for as the agent (newest first, at most 200)."),
    HttpApiEndpoint.get("getChange", "/approvals/changes/:changeId", {
      params: changeId,
      success: GrantChangeRequest,
      error: common
    }).annotate(OpenApi.Description, "One change request with its difference in plain terms (old and new). Anyone else's is a 404."),
    HttpApiEndpoint.post("buildChange", "/approvals/changes/:changeId/build", {
      params: changeId,
      success: DelegationBuild,
      error: [...common, OutOfScopeError]
    }).annotate(
      OpenApi.Description,
      "The owner's one replacement operation: disables the old grant, checks on chain that its spend is what is carried over, enables the new grant (its limits are limits of the whole). Sign the operation and the delegation as for POST /delegations, then accept."
    ),
    HttpApiEndpoint.post("acceptChange", "/approvals/changes/:changeId/accept", {
      params: changeId,
      payload: Schema.Struct({
        userOp: SignedUserOp,
        userOpHash: Hash32,
        delegationSignatures: Schema.Array(DelegationSignature)
      }),
      success: GrantChangeRequest,
      error: [...common, OutOfScopeError]
    }).annotate(
      OpenApi.Description,
      "The owner accepts with the signed replacement (the latest build): relayed, waited for; `accepted` with `newDelegationId` once the new grant is enabled. Repeated: the same answer."
    ),
    HttpApiEndpoint.post("declineChange", "/approvals/changes/:changeId/decline", {
      params: changeId,
      payload: Schema.Struct({ reason: TextOfLength(1, 500) }),
      success: GrantChangeRequest,
      error: common
    }).annotate(OpenApi.Description, "The owner declines a pending change request; the agent is told. 409 once settled."),
    // Approvers who do not sign in here (docs/approvals.md).
    HttpApiEndpoint.post("addContact", "/approvals/contacts", {
      payload: Schema.Struct({ approver: Address, url: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048)) }),
      success: ApproverContact.pipe(HttpApiSchema.status(201)),
      error: common
    }).annotate(
      OpenApi.Description,
      "The owner registers a signed webhook for an approver its grants name: that approver's notifications of this owner's requests are delivered there (Standard Webhooks signature; the secret is shown now only)."
    ),
    HttpApiEndpoint.get("listContacts", "/approvals/contacts", {
      success: Schema.Array(ApproverContact.mapFields(({ secret: _, ...rest }) => rest)),
      error: common
    }).annotate(OpenApi.Description, "The owner's approver webhooks (never the secret)."),
    HttpApiEndpoint.delete("removeContact", "/approvals/contacts/:contactId", {
      params: { contactId: Schema.String.check(Schema.isPattern(/^whe_[0-9a-f-]{36}$/)) },
      success: HttpApiSchema.NoContent,
      error: common
    }).annotate(OpenApi.Description, "Removes an approver webhook; its pending deliveries are dead-lettered.")
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Approvals", description: "Approvals above a threshold (docs/approvals.md)." }))
{}
