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
import { IntentType, SignedUserOp, UserOpBuild, GasTokenChoice } from "../domain/Operations.ts"
import { ChainId, Hash32, Id, TextOfLength } from "../domain/Primitives.ts"
import {
  Delegation,
  DelegationBuild,
  DelegationBuildRequest,
  DelegationSignature,
  DelegationStatus,
  PolicySnapshot,
  RedemptionRecord
} from "./Domain.ts"

const delegationId = { delegationId: Id }
const common = [
  BadRequestError,
  NotFoundError,
  OutOfScopeError,
  UpstreamUnavailableError,
  UpstreamTimeoutError,
  ServiceUnavailableError
] as const

export class DelegationsApi extends HttpApiGroup.make("delegations")
  .add(
    HttpApiEndpoint.get("list", "/delegations", {
      query: {
        status: Schema.optionalKey(DelegationStatus),
        accountId: Schema.optionalKey(Id),
        // Beyond the contract: one chain's grants (without it and without accountId, every served chain's).
        chainId: Schema.optionalKey(ChainId),
        // Beyond the contract: `delegatee` lists the grants the account holds (docs/delegations.md, "The delegatee's lane").
        role: Schema.optionalKey(Schema.Literals(["owner", "delegatee"]))
      },
      success: Schema.Array(Delegation),
      error: common
    }),
    HttpApiEndpoint.post("build", "/delegations/build", {
      payload: DelegationBuildRequest,
      success: DelegationBuild,
      error: common
    }),
    HttpApiEndpoint.post("create", "/delegations", {
      payload: Schema.Struct({
        userOp: SignedUserOp,
        userOpHash: Hash32,
        intentType: IntentType,
        // Beyond the contract: the owner's EIP-712 signature of each leg the build returned.
        delegationSignatures: Schema.optionalKey(Schema.Array(DelegationSignature))
      }),
      success: Delegation,
      error: [...common, ConflictError]
    }),
    HttpApiEndpoint.get("get", "/delegations/:delegationId", {
      params: delegationId,
      success: Delegation,
      error: common
    }),
    HttpApiEndpoint.post("act", "/delegations/:delegationId/actions", {
      params: delegationId,
      payload: Schema.Struct({
        recipient: TextOfLength(1, 256),
        amount: Schema.Finite,
        // Beyond the contract: which budget token (symbol); default the per-action maximum's token.
        token: Schema.optionalKey(TextOfLength(1, 64)),
        gasToken: Schema.optionalKey(GasTokenChoice)
      }),
      success: UserOpBuild,
      error: common
    }).annotate(
      OpenApi.Description,
      "Builds the delegate's operation for one transfer within the grant (the delegate signs and relays it). " +
        "Beyond the contract: when the grant has an approval rule and the transfer is above its token's threshold, nothing is built: " +
        "an approval request is opened (its budget held until its deadline; the owner and the approvers are told) and the answer is " +
        "422 `out_of_scope` with `declineReason` `approval_required` and `details` { approvalId, link, status, required, deadline }. " +
        "Once enough approvals are in, the build is fetched from POST /approvals/{approvalId}/build (docs/approvals.md)."
    ),
    HttpApiEndpoint.post("freeze", "/delegations/:delegationId/freeze", {
      params: delegationId,
      success: Schema.Never,
      error: common
    }),
    HttpApiEndpoint.post("unfreeze", "/delegations/:delegationId/unfreeze", {
      params: delegationId,
      success: Schema.Never,
      error: common
    }),
    HttpApiEndpoint.post("revoke", "/delegations/:delegationId/revoke", {
      params: delegationId,
      success: UserOpBuild,
      error: common
    }),
    HttpApiEndpoint.get("policySnapshots", "/delegations/:delegationId/policy-snapshots", {
      params: delegationId,
      success: Schema.Array(PolicySnapshot),
      error: common
    }),
    // Beyond the contract: the chain follower's record (docs/follower.md, "Redemptions as they happened").
    HttpApiEndpoint.get("redemptions", "/delegations/:delegationId/redemptions", {
      params: delegationId,
      success: Schema.Array(RedemptionRecord),
      error: common
    }).annotateMerge(OpenApi.annotations({
      summary: "Redemptions as the chain showed them",
      description: "Every redemption of the grant the chain follower saw, oldest first: the permission context's chain of " +
        "delegations (leaf first, each with its delegator and delegate), who redeemed it (`msg.sender` of `redeemDelegations`: " +
        "the delegate, or whoever it passed the grant to), how (`transaction`, `user_operation`, `account_execute`) and what " +
        "moved (token, amount, recipient, from the receipt's transfers). A redemption whose block left the chain is not listed. " +
        "Caller: the grant's owner or its holder (anyone else: 404). Changes nothing."
    }))
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Delegations", description: "Scoped, revocable grants of authority." }))
{}
