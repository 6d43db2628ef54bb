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
import { GrantChangeRequests } from "./Changes.ts"
import { ApproverContacts } from "./Contacts.ts"

export const ApprovalsLive = Layer.mergeAll(Approvals.layer, GrantChangeRequests.layer, ApproverContacts.layer, ApprovalMetricsLive).pipe(
  Layer.provide(Layer.mergeAll(DelegationsLive, ApprovalGateLive, RelayHooksLive, Notifications.layer))
)

export const ApprovalsHandlers = HttpApiBuilder.group(
  contractOf(ApprovalsApi),
  "approvals",
  Effect.fn(function*(handlers) {
    const approvals = yield* Approvals
    const changes = yield* GrantChangeRequests
    const contacts = yield* ApproverContacts
    return handlers
      .handle("list", ({ query }) => Effect.flatMap(CurrentSigner, (s) => approvals.list(s, query.status)))
      .handle("get", ({ params }) => Effect.flatMap(CurrentSigner, (s) => approvals.get(s, params.approvalId)))
      .handle("approve", ({ params, payload }) => Effect.flatMap(CurrentSigner, (s) => approvals.approve(s, params.approvalId, payload)))
      .handle("deny", ({ params, payload }) => Effect.flatMap(CurrentSigner, (s) => approvals.deny(s, params.approvalId, payload.reason)))
      .handle("build", ({ params }) => Effect.flatMap(CurrentSigner, (s) => approvals.build(s, params.approvalId)))
      .handle("askChange", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => changes.ask(s, payload)))
      .handle("listChanges", ({ query }) => Effect.flatMap(CurrentSigner, (s) => changes.list(s, query.status)))
      .handle("getChange", ({ params }) => Effect.flatMap(CurrentSigner, (s) => changes.get(s, params.changeId)))
      .handle("buildChange", ({ params }) => Effect.flatMap(CurrentSigner, (s) => changes.build(s, params.changeId)))
      .handle("acceptChange", ({ params, payload }) =>
        Effect.flatMap(CurrentSigner, (s) => changes.accept(s, params.changeId, { ...payload, intentType: "delegation_enable" })))
      .handle("addContact", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => contacts.create(s, payload)))
      .handle("listContacts", () => Effect.flatMap(CurrentSigner, (s) => contacts.list(s)))
      .handle("removeContact", ({ params }) => Effect.flatMap(CurrentSigner, (s) => contacts.remove(s, params.contactId)))
      .handle("declineChange", ({ params, payload }) => Effect.flatMap(CurrentSigner, (s) => changes.decline(s, params.changeId, payload.reason)))
  })
).pipe(Layer.provide(ApprovalsLive))
