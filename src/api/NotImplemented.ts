/**
 * Handlers for endpoints whose behaviour belongs to an issue not yet done: they
 * answer 501 `not_implemented` with the envelope, never a made-up success.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { NotImplemented } from "./Errors.ts"

type GroupName = "delegations" | "userops" | "activity" | "notifications" | "marketplace" | "marketplaceStream" | "launchpad"

export const notImplemented = (what: string) =>
  Effect.fail(new NotImplemented({ message: `${what} is not implemented yet` }))

/** Every endpoint of `group` answers 501 (`owner` names the issue that will implement it). */
export const notImplementedGroup = (group: GroupName, owner: string) =>
  HttpApiBuilder.group(Api, group, (handlers) => {
    // Generic over the group's endpoints, which the handler builder cannot type.
    let h: any = handlers
    const endpoints = Api.groups[group].endpoints as Record<string, { path: string; method: string }>
    for (const [name, endpoint] of Object.entries(endpoints)) {
      h = h.handle(name, () => notImplemented(`${endpoint.method} ${endpoint.path} (${owner})`))
    }
    return h as never
  })
