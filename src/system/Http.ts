import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { ServiceUnavailable } from "../api/Errors.ts"
import { ping } from "../db/Database.ts"

export const SystemHandlers = HttpApiBuilder.group(
  Api,
  "system",
  Effect.fn(function*(handlers) {
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        ping.pipe(
          Effect.timeout("2 seconds"),
          Effect.as({ status: "ready" as const, database: "ok" as const }),
          Effect.catchCause(() => Effect.fail(new ServiceUnavailable({ message: "database is not reachable" })))
        ))
  })
)
