import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { ServiceUnavailable } from "../api/Errors.ts"
import { Chains } from "../chain/Chains.ts"
import { ping } from "../db/Database.ts"
import { Lifecycle } from "../platform/Lifecycle.ts"
import { SystemApi } from "./Api.ts"

export const SystemHandlers = HttpApiBuilder.group(
  contractOf(SystemApi),
  "system",
  Effect.fn(function*(handlers) {
    const chains = yield* Chains
    const lifecycle = yield* Effect.serviceOption(Lifecycle)
    // Draining (SIGTERM): not ready, at once (also a check under way when it starts), so a load
    // balancer sends nothing new here.
    const shuttingDown = Effect.fail(new ServiceUnavailable({ message: "the service is shutting down" }))
    const draining = Option.isSome(lifecycle) ? lifecycle.value.isDraining : () => false
    const drainStarts = Option.isSome(lifecycle) ? Effect.andThen(lifecycle.value.whenDraining, shuttingDown) : Effect.never
    const check = ping.pipe(
      Effect.timeout("2 seconds"),
      Effect.catchCause(() => Effect.fail(new ServiceUnavailable({ message: "database is not reachable" }))),
      Effect.andThen(chains.health),
      Effect.map((statuses) => ({ status: "ready" as const, database: "ok" as const, chains: statuses })),
      Effect.raceFirst(drainStarts)
    )
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => draining() ? shuttingDown : check)
  })
)
