/**
 * The whole contract as one HttpApi. It imports nothing from the server side, so
 * a typed client (`HttpApiClient.make(Api)`) can be built from it alone.
 */
import { OpenApi } from "effect/http-api"
import { contractRoot } from "./api/Contract.ts"
import { AccountsApi, GuardianApi, PanicApi } from "./owner/Api.ts"
import { ApprovalsApi } from "./approvals/Api.ts"
import { ErrorEnvelope } from "./api/Envelope.ts"
import { ActivityApi } from "./activity/Api.ts"
import { Ap2Api } from "./ap2/Api.ts"
import { AuthApi, SessionApi } from "./auth/Api.ts"
import { DelegationsApi } from "./delegations/Api.ts"
import { DevApi } from "./dev/Api.ts"
import { LaunchpadApi } from "./launchpad/Api.ts"
import { HiringApi } from "./hiring/Api.ts"
import { MarketplaceApi, MarketplaceStreamApi } from "./marketplace/Api.ts"
import { NotificationsApi } from "./notifications/Api.ts"
import { PermissionsApi } from "./permissions/Api.ts"
import { PaymentsApi } from "./payments/Api.ts"
import { withReference } from "./reference/index.ts"
import { SystemApi } from "./system/Api.ts"
import { UserOpsApi } from "./userops/Api.ts"

export class Api extends contractRoot
  .add(SystemApi)
  .add(AuthApi)
  .add(SessionApi)
  .add(AccountsApi)
  .add(PanicApi)
  .add(GuardianApi)
  .add(DelegationsApi)
  .add(PermissionsApi)
  .add(Ap2Api)
  .add(ApprovalsApi)
  .add(UserOpsApi)
  .add(ActivityApi)
  .add(NotificationsApi)
  .add(MarketplaceApi)
  .add(MarketplaceStreamApi)
  .add(HiringApi)
  .add(LaunchpadApi)
  .add(PaymentsApi)
  .add(DevApi)
  .middleware(ErrorEnvelope)
  .annotateMerge(
    OpenApi.annotations({
      title: "Delegated-Authority Account Service",
      version: "1",
      description:
        "Scoped, revocable authority over ERC-4337 smart accounts, a user-operation relay and a tamper-evident audit log. " +
        "Every path is served both as written and under the `/v1` prefix. Start with the delegation walkthrough in the README; " +
        "each operation below says who may call it and what it changes on chain, with an example recorded from the local chain.",
      // Summaries, descriptions, examples and the bearer scheme's form: src/reference/.
      transform: withReference
    })
  )
{}
