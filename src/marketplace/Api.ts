import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequestError, NotFoundError, OutOfScopeError, ServiceUnavailableError, UpstreamTimeoutError, UpstreamUnavailableError } from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { Address, ChainId, Id, PageLimit, Text, TextOfLength } from "../domain/Primitives.ts"
import { Agent, AgentsPage, AgentStat, EvaluatorStatus, Job, ManagedConnection, ManagedConnectStart } from "./Domain.ts"

const upstream = [UpstreamUnavailableError, UpstreamTimeoutError] as const

/** The stream's query; also decoded by the node-level route (`Http.ts`). */
export const StreamQuery = Schema.Struct({ wallets: Schema.optionalKey(Text) })

/** The public live stats stream: no session needed. */
export class MarketplaceStreamApi extends HttpApiGroup.make("marketplaceStream")
  .add(
    HttpApiEndpoint.get("stream", "/marketplace/agents/stream", {
      query: StreamQuery,
      success: HttpApiSchema.StreamSse({ data: AgentStat }),
      error: [BadRequestError, ServiceUnavailableError, ...upstream]
    })
  )
  .annotateMerge(OpenApi.annotations({ title: "Marketplace stream", description: "Live agent stats (SSE)." }))
{}

export class MarketplaceApi extends HttpApiGroup.make("marketplace")
  .add(
    HttpApiEndpoint.get("listAgents", "/marketplace/agents", {
      query: { cursor: Schema.optionalKey(TextOfLength(1, 512)), limit: PageLimit },
      success: AgentsPage,
      error: [BadRequestError, ...upstream]
    }),
    HttpApiEndpoint.get("evaluator", "/marketplace/agents/evaluator", {
      success: EvaluatorStatus
    }),
    HttpApiEndpoint.get("searchAgents", "/marketplace/agents/search", {
      query: {
        query: TextOfLength(1, 1000),
        chainIds: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^\d+(,\d+)*$/))),
        topK: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
      },
      success: Schema.Array(Agent),
      error: [BadRequestError, OutOfScopeError, ...upstream]
    }),
    HttpApiEndpoint.get("getAgent", "/marketplace/agents/:wallet", {
      params: { wallet: Address },
      success: Agent,
      error: [NotFoundError, ...upstream]
    }),
    HttpApiEndpoint.get("listJobs", "/marketplace/jobs", {
      success: Schema.Array(Job),
      error: upstream
    }),
    HttpApiEndpoint.get("getJob", "/marketplace/jobs/:chainId/:jobId", {
      params: { chainId: ChainId, jobId: Id },
      success: Job,
      error: [NotFoundError, ...upstream]
    }),
    HttpApiEndpoint.get("managedConnection", "/marketplace/managed/connection", {
      success: ManagedConnection,
      error: upstream
    }),
    HttpApiEndpoint.post("managedConnect", "/marketplace/managed/connect", {
      success: ManagedConnectStart,
      error: upstream
    }),
    HttpApiEndpoint.get("managedConnectStatus", "/marketplace/managed/connect/status", {
      query: { requestId: TextOfLength(1, 512) },
      success: ManagedConnection,
      error: [NotFoundError, ...upstream]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Marketplace", description: "Read-only proxy of the agent marketplace; its operation builds are the Hiring group's." }))
{}
