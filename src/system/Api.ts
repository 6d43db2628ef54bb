import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ServiceUnavailableError } from "../api/Errors.ts"

export const Health = Schema.Struct({ status: Schema.Literal("ok") }).annotate({ identifier: "Health" })
export const Readiness = Schema.Struct({
  status: Schema.Literal("ready"),
  database: Schema.Literal("ok")
}).annotate({ identifier: "Readiness" })

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("live", "/health/live", { success: Health }),
    HttpApiEndpoint.get("ready", "/health/ready", { success: Readiness, error: ServiceUnavailableError })
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Liveness and readiness." }))
{}
