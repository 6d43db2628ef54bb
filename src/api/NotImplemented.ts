/**
 * Handlers for endpoints whose behaviour belongs to an issue not yet done: they
 * answer 501 `not_implemented` with the envelope, never a made-up success.
 */
import { Effect, type Layer } from "effect"
import { HttpApiBuilder, type HttpApiGroup } from "effect/http-api"
import { Api } from "../Api.ts"
import { currentRequestId } from "./Envelope.ts"
import { NotImplemented } from "./Errors.ts"
import { envelopeResponse } from "./GlobalEnvelope.ts"

type GroupName = "delegations" | "userops" | "activity" | "notifications" | "marketplace" | "marketplaceStream" | "launchpad"

/** A typed 501 for one endpoint of a group that otherwise works. */
export const notImplemented = (what: string) =>
  Effect.fail(new NotImplemented({ message: `${what} is not implemented yet` }))

/**
 * Every endpoint of `group` answers 501 (`owner` names the issue that will implement it).
 * The answer is a ready response, so it needs no 501 declared on the endpoints.
 */
export const notImplementedGroup = <G extends GroupName>(
  group: G,
  owner: string
): Layer.Layer<HttpApiGroup.Service<"delegated-authority", G>> =>
  HttpApiBuilder.group(Api, group, (handlers) => {
    // Generic over the group's endpoints, which the handler builder cannot type.
    let h: any = handlers
    const endpoints = Api.groups[group].endpoints as Record<string, { path: string; method: string }>
    for (const [name, endpoint] of Object.entries(endpoints)) {
      h = h.handle(name, () =>
        Effect.map(currentRequestId, (requestId) =>
          envelopeResponse(
            new NotImplemented({
              message: `${endpoint.method} ${endpoint.path} is not implemented yet (${owner})`,
              ...(requestId === undefined ? {} : { requestId })
            })
          )))
    }
    return h
  }) as never
