/**
 * The delegations endpoints: thin handlers over `Delegations`. The feature's own
 * services are provided here, so the group needs only infrastructure (SqlClient,
 * Accounts, the chain layers).
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { BadRequest, OutOfScope } from "../api/Errors.ts"
import type { ApprovalRequest } from "../domain/Approvals.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { Delegations } from "./Delegations.ts"
import { OwnerLogLive } from "./OwnerLog.ts"
import { AccountRulesLive, ApprovalGateLive, DeclineRecorder, OperationBuilderLive, RelayHooksLive, RelayLive } from "./Ports.ts"
import { DelegationsApi } from "./Api.ts"

/** Delegations with what it stands on; the relay layers are shared constants (one builder, one hook registry, one relay). */
export const DelegationsLive = Layer.mergeAll(Delegations.layer, OwnerLogLive).pipe(
  Layer.provide(
    Layer.mergeAll(
      DeclineRecorder.layerAudit,
      TokenRegistry.layer,
      OperationBuilderLive,
      RelayHooksLive,
      RelayLive,
      AccountRulesLive,
      ApprovalGateLive
    )
  )
)

/** A held action is answered as the approval request it became (docs/approvals.md: why a 422 and not a 202). */
const buildOrHeld = (answer: UserOpBuild | ApprovalRequest) =>
  "userOp" in answer ? Effect.succeed(answer) : Effect.fail(
    new OutOfScope({
      message: `Above its threshold this action needs ${answer.required} approvals: approval request ${answer.id} is ${answer.status} until ${answer.deadline}`,
      declineReason: "approval_required",
      details: { approvalId: answer.id, link: answer.link, status: answer.status, required: answer.required, deadline: answer.deadline }
    })
  )

const perDelegationFreeze = (delegationId: string) =>
  Effect.gen(function*() {
    yield* CurrentSigner
    return yield* new BadRequest({
      message: "There is no per-delegation freeze: freeze the whole account (intent account_freeze) or revoke this delegation",
      details: { delegationId }
    })
  })

export const DelegationsHandlers = HttpApiBuilder.group(
  contractOf(DelegationsApi),
  "delegations",
  Effect.fn(function*(handlers) {
    const delegations = yield* Delegations
    return handlers
      .handle("list", ({ query }) => Effect.flatMap(CurrentSigner, (s) => delegations.list(s, query)))
      .handle("build", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => delegations.build(s, payload)))
      .handle("create", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => delegations.create(s, payload)))
      .handle("get", ({ params }) => Effect.flatMap(CurrentSigner, (s) => delegations.get(s, params.delegationId)))
      .handle("act", ({ params, payload }) =>
        Effect.flatMap(CurrentSigner, (s) => delegations.request(s, params.delegationId, payload)).pipe(Effect.flatMap(buildOrHeld)))
      .handle("freeze", ({ params }) => perDelegationFreeze(params.delegationId))
      .handle("unfreeze", ({ params }) => perDelegationFreeze(params.delegationId))
      .handle("revoke", ({ params }) => Effect.flatMap(CurrentSigner, (s) => delegations.revoke(s, params.delegationId)))
      .handle("policySnapshots", ({ params }) =>
        Effect.flatMap(CurrentSigner, (s) => delegations.snapshots(s, params.delegationId)))
      .handle("redemptions", ({ params }) => Effect.flatMap(CurrentSigner, (s) => delegations.redemptions(s, params.delegationId)))
  })
).pipe(Layer.provide(DelegationsLive))
