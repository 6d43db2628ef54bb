/**
 * Hiring's contract: the hire (a mandate and its enable operation), the job builds under a
 * mandate, the mandates as grants, and the deposit to the managed agent wallet. The paths are
 * the marketplace's (spec); the group is hiring's own, beside the read-only proxy
 * (`marketplace/Api.ts`). docs/marketplace.md, "Hiring".
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  OutOfScopeError,
  ServiceUnavailableError,
  UpstreamTimeoutError,
  UpstreamUnavailableError
} from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { GasTokenChoice, UserOpBuild } from "../domain/Operations.ts"
import { Address, ChainId, Hash32, Id, TextOfLength } from "../domain/Primitives.ts"
import { HireBuild, JobOpBuild, ManagedDepositBuild, MandateSummary } from "./Domain.ts"
import { HirePolicy, HirePolicyInput } from "./IdentityPolicy.ts"

/** Every build reads the chain (503 naming it when down); the hire reads the upstream marketplace too. */
const builds = [
  BadRequestError,
  NotFoundError,
  OutOfScopeError,
  ServiceUnavailableError,
  UpstreamUnavailableError,
  UpstreamTimeoutError
] as const
const PositiveAmount = Schema.Finite.check(Schema.isGreaterThan(0))

export class HiringApi extends HttpApiGroup.make("hiring")
  .add(
    HttpApiEndpoint.post("hireBuild", "/marketplace/agents/hire/build", {
      payload: Schema.Struct({
        agentWallet: Address,
        chainId: ChainId,
        perJobBudget: PositiveAmount,
        delegateeAddress: Address
      }),
      success: HireBuild,
      // 409: the owner's hire policy refuses the provider (not a registered ERC-8004 agent, or below the floor).
      error: [...builds, ConflictError]
    }),
    // Beyond the contract: the owner's hire policy (docs/marketplace.md, "Hire only a named agent").
    HttpApiEndpoint.get("getHirePolicy", "/marketplace/hire-policy", {
      success: HirePolicy
    }),
    HttpApiEndpoint.put("setHirePolicy", "/marketplace/hire-policy", {
      payload: HirePolicyInput,
      success: HirePolicy,
      error: [BadRequestError]
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
    // Beyond the contract: mandates are grants like any other (docs/marketplace.md, "Mandates as grants").
    HttpApiEndpoint.get("listMandates", "/marketplace/mandates", {
      success: Schema.Array(MandateSummary)
    }),
    HttpApiEndpoint.post("revokeMandate", "/marketplace/mandates/:mandateId/revoke", {
      params: { mandateId: Hash32 },
      success: UserOpBuild,
      error: builds
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
  .annotateMerge(OpenApi.annotations({
    title: "Hiring",
    description: "Hire a marketplace agent under a mandate the chain enforces, build its jobs, revoke it."
  }))
{}
