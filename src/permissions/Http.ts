/**
 * The permissions endpoints: thin handlers over `Permissions`. A request the chain cannot hold
 * exactly becomes the 400 envelope naming the field (`details.field`, `details.issues` as a
 * decoding failure would), with what is supported. The feature's services are provided here
 * (Delegations and the relay are the same shared layers the delegations group uses).
 */
import { Effect, Layer, type Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { PermissionsApi } from "./Api.ts"
import { BadRequest, Conflict } from "../api/Errors.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { DelegationsLive } from "../delegations/Http.ts"
import { RelayLive } from "../delegations/Ports.ts"
import { Notifications } from "../notifications/Notifications.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { asJson, encodeAnswer, rawNumericId } from "./JsonRpc.ts"
import { type PermissionRefused, Permissions } from "./Permissions.ts"

export const PermissionsLive = Permissions.layer.pipe(
  Layer.provide(Layer.mergeAll(DelegationsLive, RelayLive, TokenRegistry.layer, Notifications.layer))
)

/** The refusal as a 400 naming the body's field. */
const badRequest = (prefix: string) => (e: PermissionRefused) => {
  const field = e.index === undefined
    ? (e.field === "" ? prefix : `${prefix}.${e.field}`.replace(/^\./, ""))
    : `${prefix}[${e.index}]${e.field === "" ? "" : `.${e.field}`}`
  return Effect.fail(new BadRequest({
    message: e.message,
    details: asJson({
      field,
      issues: [{ path: `body${field === "" ? "" : `.${field}`}`, message: e.message }],
      ...(e.supported === undefined ? {} : { supported: e.supported }),
      ...(e.served === undefined ? {} : { served: e.served })
    }) as Schema.JsonObject
  }))
}

export const PermissionsHandlers = HttpApiBuilder.group(
  contractOf(PermissionsApi),
  "permissions",
  Effect.fn(function*(handlers) {
    const permissions = yield* Permissions
    return handlers
      .handle("rpc", ({ payload }) =>
        Effect.gen(function*() {
          const answer = yield* permissions.rpc(yield* CurrentSigner, payload)
          // A numeric id is echoed as the body wrote it (JSON.parse rounds one above 2^53): from the
          // body's text (already read for the payload), the answer written by hand.
          if (typeof answer.id !== "number") return answer
          const text = yield* Effect.orElseSucceed((yield* HttpServerRequest.HttpServerRequest).text, () => "")
          const rawId = rawNumericId(text)
          return rawId === undefined || rawId === String(answer.id)
            ? answer
            : HttpServerResponse.text(encodeAnswer(answer, rawId), { contentType: "application/json" })
        }))
      .handle("request", ({ payload }) =>
        Effect.flatMap(CurrentSigner, (s) => permissions.request(s, payload.requests)).pipe(
          Effect.catchTag("PermissionRefused", badRequest("requests"))
        ))
      .handle("ask", ({ payload }) =>
        Effect.flatMap(CurrentSigner, (s) => permissions.ask(s, payload.request)).pipe(
          // One request, named `request` in the body: its fields are `request.<field>`.
          Effect.catchTag("PermissionRefused", badRequest("request"))
        ))
      .handle("asked", ({ params }) => Effect.flatMap(CurrentSigner, (s) => permissions.asked(s, params.approvalId)))
      .handle("supported", () => Effect.andThen(CurrentSigner, permissions.supported))
      .handle("granted", () => Effect.flatMap(CurrentSigner, (s) => permissions.granted(s)))
      .handle("revoke", ({ payload }) =>
        Effect.flatMap(CurrentSigner, (s) => permissions.revoke(s, payload.permissionContext)).pipe(
          Effect.catchTag("PermissionRefused", badRequest("")),
          Effect.flatMap((r) =>
            r._tag === "Offered"
              ? Effect.succeed(r.approval)
              : Effect.fail(new Conflict({ message: "This permission is already revoked", details: { delegationId: r.delegationId } })))
        ))
      .handle("approvals", ({ query }) => Effect.flatMap(CurrentSigner, (s) => permissions.approvals(s, query.status)))
      .handle("approval", ({ params }) => Effect.flatMap(CurrentSigner, (s) => permissions.approval(s, params.approvalId)))
      .handle("approve", ({ params, payload }) =>
        Effect.flatMap(CurrentSigner, (s) => permissions.approve(s, params.approvalId, payload)))
      .handle("reject", ({ params }) => Effect.flatMap(CurrentSigner, (s) => permissions.reject(s, params.approvalId)))
  })
).pipe(Layer.provide(PermissionsLive))
