import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { ServiceUnavailable } from "../api/Errors.ts"
import { Chains } from "../chain/Chains.ts"
import { ping } from "../db/Database.ts"
import { SystemApi } from "./Api.ts"

export const SystemHandlers = HttpApiBuilder.group(
  contractOf(SystemApi),
  "system",
  Effect.fn(function*(handlers) {
    const chains = yield* Chains
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () =>
        ping.pipe(
          Effect.timeout("2 seconds"),
          Effect.catchCause(() => Effect.fail(new ServiceUnavailable({ message: "database is not reachable" }))),
          Effect.andThen(chains.health),
          Effect.map((statuses) => ({ status: "ready" as const, database: "ok" as const, chains: statuses }))
        ))
  })
)
