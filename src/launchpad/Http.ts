/**
 * The launchpad group's handlers: thin, every rule lives in `Launchpad`.
 * `LaunchpadHandlers` needs `Launchpad`; `LaunchpadLive` provides it given an `HttpClient`.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { Launchpad } from "./Launchpad.ts"

export { LaunchpadLive } from "./Launchpad.ts"

export const LaunchpadHandlers = HttpApiBuilder.group(
  Api,
  "launchpad",
  Effect.fn(function*(handlers) {
    const launchpad = yield* Launchpad
    return handlers
      .handle("listTokens", ({ query }) =>
        launchpad.listTokens(query).pipe(
          Effect.map(({ stale: _stale, ...page }) => page)
        ))
      .handle("tokenHistory", ({ params, query }) =>
        launchpad.history(params.chain, params.address, query.range).pipe(
          Effect.map(({ stale: _stale, ...history }) => history)
        ))
  })
)
