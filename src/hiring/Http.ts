/**
 * Thin handlers for the `hiring` group. Rules live in `Hiring` and `MandateGrants`.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { AuditLive } from "../audit/Recorder.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { AccountRulesLive } from "../owner/Live.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { OperationBuilderLive, RelayHooksLive } from "../userops/Live.ts"
import { HiringApi } from "./Api.ts"
import { Hiring, HiringLive } from "./Hiring.ts"
import { JobWatcherLive } from "./JobWatcher.ts"
import { MandateGrants } from "./MandateGrants.ts"
import { MandatesSql } from "./Repository.ts"
import { HirePoliciesSql } from "./IdentityPolicy.ts"

export const HiringHandlers = HttpApiBuilder.group(
  contractOf(HiringApi),
  "hiring",
  Effect.fn(function*(handlers) {
    const hiring = yield* Hiring
    const grants = yield* MandateGrants
    const signer = Effect.gen(function*() {
      return (yield* CurrentSigner).address
    })

    return handlers.handleAll({
      hireBuild: ({ payload }) => Effect.flatMap(signer, (s) => hiring.hire(s, payload)),
      getHirePolicy: () => Effect.flatMap(signer, hiring.policy),
      setHirePolicy: ({ payload }) => Effect.flatMap(signer, (s) => hiring.setPolicy(s, payload)),
      createJobBuild: ({ payload }) => Effect.flatMap(signer, (s) => hiring.createJob(s, payload)),
      fundJobBuild: ({ payload }) => Effect.flatMap(signer, (s) => hiring.fundJob(s, payload)),
      listMandates: () => Effect.flatMap(signer, grants.list),
      revokeMandate: ({ params }) => Effect.flatMap(signer, (s) => grants.revoke(s, params.mandateId)),
      managedDepositBuild: ({ payload }) => Effect.flatMap(signer, (s) => hiring.managedDeposit(s, payload))
    })
  })
)

/**
 * What the service runs: the handlers, the mandates in PostgreSQL, the operation builds on the
 * one shared `OperationBuilder`, and the watcher that logs the other parties' job steps. Needs
 * SqlClient, Accounts, the chains and the marketplace port (`HiringMarket`, from `Server.ts`).
 */
export const HiringAppLive = HiringHandlers.pipe(
  Layer.provide(
    Layer.mergeAll(HiringLive.pipe(Layer.provide(AuditLive)), MandateGrants.layer, JobWatcherLive.pipe(Layer.provide(AuditLive))).pipe(
      Layer.provideMerge(Layer.mergeAll(MandatesSql, HirePoliciesSql)),
      Layer.provide(Layer.mergeAll(OperationBuilderLive, TokenRegistry.layer, RelayHooksLive, AccountRulesLive))
    )
  )
)
