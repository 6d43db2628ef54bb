/**
 * The activity group's handlers: thin, the rules live in `Activity` (reads) and
 * `AuditChain` (the log). Needs only infrastructure (SqlClient) and `Accounts`.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { Activity } from "./Activity.ts"
import { ActivityApi } from "./Api.ts"

export const ActivityHandlers = HttpApiBuilder.group(
  contractOf(ActivityApi),
  "activity",
  Effect.fn(function*(handlers) {
    const activity = yield* Activity
    return handlers
      .handle("list", ({ query }) => Effect.flatMap(CurrentSigner, (s) => activity.list(s.address, query)))
      .handle("anchor", () => Effect.flatMap(CurrentSigner, (s) => activity.anchor(s.address)))
      .handle("proof", ({ params }) => Effect.flatMap(CurrentSigner, (s) => activity.proof(s.address, params.eventId)))
      .handle("get", ({ params }) => Effect.flatMap(CurrentSigner, (s) => activity.get(s.address, params.eventId)))
  })
).pipe(Layer.provide(Activity.layer))
