/** The approvals endpoints: thin handlers over `Approvals`, with the delegations feature it registers into. */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { DelegationsLive } from "../delegations/Http.ts"
import { ApprovalGateLive, RelayHooksLive } from "../delegations/Ports.ts"
import { Notifications } from "../notifications/Notifications.ts"
import { ApprovalsApi } from "./Api.ts"
import { ApprovalMetricsLive } from "./ApprovalMetrics.ts"
import { Approvals } from "./Approvals.ts"

export const ApprovalsLive = Layer.merge(Approvals.layer, ApprovalMetricsLive).pipe(
  Layer.provide(Layer.mergeAll(DelegationsLive, ApprovalGateLive, RelayHooksLive, Notifications.layer))
)

export const ApprovalsHandlers = HttpApiBuilder.group(
  contractOf(ApprovalsApi),
  "approvals",
  Effect.fn(function*(handlers) {
    const approvals = yield* Approvals
    return handlers
      .handle("list", ({ query }) => Effect.flatMap(CurrentSigner, (s) => approvals.list(s, query.status)))
      .handle("get", ({ params }) => Effect.flatMap(CurrentSigner, (s) => approvals.get(s, params.approvalId)))
      .handle("approve", ({ params, payload }) => Effect.flatMap(CurrentSigner, (s) => approvals.approve(s, params.approvalId, payload)))
      .handle("deny", ({ params, payload }) => Effect.flatMap(CurrentSigner, (s) => approvals.deny(s, params.approvalId, payload.reason)))
      .handle("build", ({ params }) => Effect.flatMap(CurrentSigner, (s) => approvals.build(s, params.approvalId)))
  })
).pipe(Layer.provide(ApprovalsLive))
