/**
 * The signer's smart accounts, the account rules (freeze) and devices.
 * `GET /account/rules`, `POST /account/rules/build` and `GET /account/devices` are
 * referenced by the contract without shapes; these are ours (docs/decisions.md).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
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
import { UserOpBuild } from "../domain/Operations.ts"
import { Address, ChainId, Id, TextOfLength, Timestamp } from "../domain/Primitives.ts"
import { Account } from "../accounts/Domain.ts"

export const AccountRules = Schema.Struct({
  accountId: Schema.String,
  address: Address,
  frozen: Schema.Boolean,
  /** Intent types this account's rules build accepts. */
  buildableIntents: Schema.Array(Schema.Literals(["account_freeze", "account_unfreeze"]))
}).annotate({ identifier: "AccountRules" })

export const RulesBuildRequest = Schema.Struct({
  intentType: Schema.Literals(["account_freeze", "account_unfreeze"]),
  accountId: Schema.optionalKey(Id),
  /** Without `accountId`: the signer's lowest visible account on this chain (default: the primary chain). */
  chainId: Schema.optionalKey(ChainId)
}).annotate({ identifier: "RulesBuildRequest" })

export const Device = Schema.Struct({
  address: Address,
  label: Schema.String,
  role: Schema.Literals(["owner", "session"]),
  addedAt: Timestamp
}).annotate({ identifier: "Device" })

const accountIdQuery = { accountId: Schema.optionalKey(Id), chainId: Schema.optionalKey(ChainId) }

export class AccountsApi extends HttpApiGroup.make("accounts")
  .add(
    HttpApiEndpoint.get("listAccounts", "/accounts", {
      success: Schema.Array(Account)
    }),
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
      error: [NotFoundError, NotImplementedError]
    }),
    HttpApiEndpoint.post("buildRules", "/account/rules/build", {
      payload: RulesBuildRequest,
      success: UserOpBuild,
      error: [
        NotFoundError,
        ConflictError,
        OutOfScopeError,
        ServiceUnavailableError,
        UpstreamUnavailableError,
        UpstreamTimeoutError,
        NotImplementedError
      ]
    }),
    HttpApiEndpoint.get("listDevices", "/account/devices", {
      query: accountIdQuery,
      success: Schema.Array(Device),
      error: NotFoundError
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Accounts", description: "The signer's smart accounts, rules and devices." }))
{}
