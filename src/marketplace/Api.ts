import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  NotImplementedError,
  OutOfScopeError,
  ServiceUnavailableError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { GasTokenChoice, UserOpBuild } from "../domain/Operations.ts"
import { Address, ChainId, Hash32, PageLimit, Id, TextOfLength, Text } from "../domain/Primitives.ts"
import {
  Agent,
  AgentsPage,
  AgentStat,
  EvaluatorStatus,
  HireBuild,
  Job,
  JobOpBuild,
  ManagedConnection,
  ManagedConnectStart,
  ManagedDepositBuild,
  MandateSummary
} from "./Domain.ts"

const upstream = [UpstreamUnavailableError, UpstreamTimeoutError] as const
const builds = [BadRequestError, NotFoundError, OutOfScopeError, ServiceUnavailableError, NotImplementedError, ...upstream] as const
const PositiveAmount = Schema.Finite.check(Schema.isGreaterThan(0))

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
    HttpApiEndpoint.post("hireBuild", "/marketplace/agents/hire/build", {
      payload: Schema.Struct({
        agentWallet: Address,
        chainId: ChainId,
        perJobBudget: PositiveAmount,
        delegateeAddress: Address
      }),
      success: HireBuild,
      error: builds
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
    HttpApiEndpoint.post("createJobBuild", "/marketplace/jobs/create/build", {
      payload: Schema.Struct({
        mandateId: Hash32,
        agentWallet: Address,
        description: TextOfLength(1, 4000),
        chainId: ChainId
      }),
      success: JobOpBuild,
      error: builds
    }),
    HttpApiEndpoint.post("fundJobBuild", "/marketplace/jobs/fund/build", {
      payload: Schema.Struct({ mandateId: Hash32, jobId: Id, perJobBudget: PositiveAmount, chainId: ChainId }),
      success: JobOpBuild,
      error: builds
    }),
    HttpApiEndpoint.get("getJob", "/marketplace/jobs/:chainId/:jobId", {
      params: { chainId: ChainId, jobId: Id },
      success: Job,
      error: [NotFoundError, ...upstream]
    }),
    // Beyond the contract: mandates are grants like any other (docs/marketplace.md, "Mandates as grants").
    HttpApiEndpoint.get("listMandates", "/marketplace/mandates", {
      success: Schema.Array(MandateSummary),
      error: [NotImplementedError]
    }),
    HttpApiEndpoint.post("revokeMandate", "/marketplace/mandates/:mandateId/revoke", {
      params: { mandateId: Hash32 },
      success: UserOpBuild,
      error: builds
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
    }),
    HttpApiEndpoint.post("managedDepositBuild", "/marketplace/managed/deposit/build", {
      payload: Schema.Struct({
        chainId: ChainId,
        amount: PositiveAmount,
        tokenSymbol: TextOfLength(1, 64),
        tokenAddress: Address,
        gasToken: Schema.optionalKey(GasTokenChoice)
      }),
      success: ManagedDepositBuild,
      // 409 when no managed wallet is connected.
      error: [...builds, ConflictError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Marketplace", description: "Read-only proxy of the agent marketplace." }))
{}
