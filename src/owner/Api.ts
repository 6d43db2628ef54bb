/**
 * The signer's smart accounts and the owner's own account: rules (freeze, safe address,
 * guardians, recovery), devices, send and withdraw-to-safety (shapes in ./Wire.ts).
 * `GET /account/rules`, `POST /account/rules/build` and `GET /account/devices` are
 * referenced by the contract without shapes; these are ours (docs/decisions.md, docs/account.md).
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
import { Authorization, InlineAuthorization } from "../auth/Middleware.ts"
import { ChainId, Id, TextOfLength } from "../domain/Primitives.ts"
import { Account } from "../accounts/Domain.ts"
import {
  AccountRules,
  DelegationBuildRequest,
  DelegationToSign,
  Device,
  FundingRequest,
  FundQuery,
  GuardianAccount,
  GuardianApprovalRequest,
  GuardianApprovalToSign,
  GuardianRecoveryRequest,
  OwnerBuild,
  OwnerBuildRequest,
  PanicAccount,
  PanicFreezeRequest,
  SignDelegationRequest
} from "./Wire.ts"

export { AccountRules, Device }

const accountIdQuery = { accountId: Schema.optionalKey(Id), chainId: Schema.optionalKey(ChainId) }

/** What a build of an operation for the owner's account can answer besides success (the three build endpoints). */
const ownerBuildErrors = [
  BadRequestError,
  NotFoundError,
  ConflictError,
  OutOfScopeError,
  ServiceUnavailableError,
  UpstreamUnavailableError,
  UpstreamTimeoutError
] as const

export class AccountsApi extends HttpApiGroup.make("accounts")
  .add(
    HttpApiEndpoint.post("createAccount", "/accounts", {
      payload: Schema.Struct({
        label: Schema.optionalKey(TextOfLength(1, 64)),
        /** Only on this chain; without it the new index is made on every served chain. */
        chainId: Schema.optionalKey(ChainId)
      }),
      success: Account,
      error: BadRequestError
    }),
    HttpApiEndpoint.get("getRules", "/account/rules", {
      query: accountIdQuery,
      success: AccountRules,
      error: [NotFoundError, ServiceUnavailableError]
    }),
    HttpApiEndpoint.post("buildRules", "/account/rules/build", {
      payload: OwnerBuildRequest,
      success: OwnerBuild,
      error: ownerBuildErrors
    }),
    HttpApiEndpoint.get("listDevices", "/account/devices", {
      query: accountIdQuery,
      success: Schema.Array(Device),
      error: [NotFoundError, ServiceUnavailableError]
    }),
    HttpApiEndpoint.post("buildAccountDelegation", "/account/rules/delegations/build", {
      payload: DelegationBuildRequest,
      success: DelegationToSign,
      error: [BadRequestError, NotFoundError, ServiceUnavailableError]
    }),
    HttpApiEndpoint.post("signAccountDelegation", "/account/rules/delegations/sign", {
      payload: SignDelegationRequest,
      success: AccountRules,
      error: [BadRequestError, NotFoundError, ServiceUnavailableError]
    }),
    HttpApiEndpoint.get("getFunding", "/account/fund", {
      query: FundQuery,
      success: FundingRequest,
      error: [BadRequestError, NotFoundError, ServiceUnavailableError]
    })
  )
  .middleware(Authorization)
  // Added after the group's middleware, so it has only its own: the session is checked in the
  // accounts' own statement (one round trip fewer, as the relay's; docs/performance.md, issue 46 item 1).
  .add(
    HttpApiEndpoint.get("listAccounts", "/accounts", {
      success: Schema.Array(Account)
    }).middleware(InlineAuthorization)
  )
  .annotateMerge(OpenApi.annotations({ title: "Accounts", description: "The signer's smart accounts, rules and devices." }))
{}

/** The panic key's own sign-in (docs/account.md, "The panic key over HTTP"): what it can freeze, and the freeze. */
export class PanicApi extends HttpApiGroup.make("panic")
  .add(
    HttpApiEndpoint.get("listPanicAccounts", "/panic/accounts", {
      success: Schema.Array(PanicAccount),
      error: [ServiceUnavailableError]
    }),
    HttpApiEndpoint.post("buildPanicFreeze", "/panic/freeze/build", {
      payload: PanicFreezeRequest,
      success: OwnerBuild,
      error: ownerBuildErrors
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Panic key", description: "A panic key's own view: the accounts it can freeze, and the freeze." }))
{}

/** A guardian's own sign-in (docs/account.md, "The guardian lane"): the accounts it guards on chain, its approval and the execution. */
export class GuardianApi extends HttpApiGroup.make("guardian")
  .add(
    HttpApiEndpoint.get("listGuardedAccounts", "/guardian/accounts", {
      success: Schema.Array(GuardianAccount),
      error: [ServiceUnavailableError]
    }),
    HttpApiEndpoint.post("buildRecoveryApproval", "/guardian/recovery/approval/build", {
      payload: GuardianApprovalRequest,
      success: GuardianApprovalToSign,
      error: [BadRequestError, NotFoundError, ConflictError, ServiceUnavailableError]
    }),
    HttpApiEndpoint.post("buildGuardianRecovery", "/guardian/recovery/build", {
      payload: GuardianRecoveryRequest,
      success: OwnerBuild,
      error: ownerBuildErrors
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Guardian", description: "A guardian's own view: the accounts it guards, and the recovery steps a guardian takes." }))
{}
