import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ServiceUnavailableError } from "../api/Errors.ts"

export const Health = Schema.Struct({ status: Schema.Literal("ok") }).annotate({ identifier: "Health" })
export const ChainReadiness = Schema.Struct({
  chainId: Schema.Int,
  name: Schema.String,
  /** `degraded`: its RPC or bundler did not answer; that chain's operations answer 503, the others are served. */
  status: Schema.Literals(["ok", "degraded"]),
  rpc: Schema.Literals(["ok", "down"]),
  bundler: Schema.Literals(["ok", "down"])
}).annotate({ identifier: "ChainReadiness" })

export const Readiness = Schema.Struct({
  status: Schema.Literal("ready"),
  database: Schema.Literal("ok"),
  /** Each served chain; a degraded chain does not make the service unready (the other chains are served). */
  chains: Schema.optionalKey(Schema.Array(ChainReadiness))
}).annotate({ identifier: "Readiness" })

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("live", "/health/live", { success: Health }),
    HttpApiEndpoint.get("ready", "/health/ready", { success: Readiness, error: ServiceUnavailableError })
  )
  .annotateMerge(OpenApi.annotations({ title: "System", description: "Liveness and readiness." }))
{}
