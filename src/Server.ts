/**
 * The HTTP application: every group's handlers, the OpenAPI document at
 * `/openapi.json`, the browsable reference at `/docs`, and the router-wide
 * envelope. Each feature's `Http.ts` exports its handlers with its own services
 * provided, so they need only infrastructure (SqlClient, HttpClient, AppConfig, ...),
 * which `main.ts` and the tests provide.
 */
import { Effect, Layer, Option } from "effect"
import { HttpMiddleware, HttpRouter, UrlParams } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "./Api.ts"
import { DatabaseOutage } from "./api/DatabaseOutage.ts"
import { EdgeConfig } from "./api/EdgeConfig.ts"
import { ErrorEnvelopeLive } from "./api/Envelope.ts"
import { EdgeSessions, GlobalEnvelope } from "./api/GlobalEnvelope.ts"
import { Sessions } from "./auth/Sessions.ts"
import { documentRoutes, makeRouteTable, ServiceRoutes, spanNameOf } from "./api/Routes.ts"
import { PeerPolicyLive } from "./platform/ClientAddress.ts"
import { RateLimitStore } from "./platform/RateLimit.ts"
import { ApprovalsHandlers } from "./approvals/Http.ts"
import { AuthHandlers, SessionHandlers } from "./auth/Http.ts"
import { AuthorizationLive, InlineAuthorizationLive } from "./auth/MiddlewareLive.ts"
import { ActivityHandlers } from "./activity/Http.ts"
import { FollowerEntriesLive } from "./delegations/FollowerEntries.ts"
import { DelegationsHandlers } from "./delegations/Http.ts"
import { Ap2Handlers } from "./ap2/Http.ts"
import { DevHandlers } from "./dev/Http.ts"
import { FollowerLive } from "./follower/Live.ts"
import { LaunchpadHandlers, LaunchpadLive } from "./launchpad/Http.ts"
import { HiringAppLive } from "./hiring/Http.ts"
import { HiringMarket } from "./hiring/Market.ts"
import { MarketplaceAppLive, MarketplaceAppServices } from "./marketplace/Http.ts"
import { ManagedWallets, Marketplace } from "./marketplace/Marketplace.ts"
import { NotificationsHandlers } from "./notifications/Http.ts"
import { AccountsHandlers, GuardianHandlers, PanicHandlers } from "./owner/Http.ts"
import { AccountRulesLive } from "./owner/Live.ts"
import { RecoveryWatcherLive } from "./owner/RecoveryWatcher.ts"
import { PermissionsHandlers } from "./permissions/Http.ts"
import { PaymentsHandlers } from "./payments/Http.ts"
import { pagesRoutes } from "./reference/Http.ts"
import { ConsoleRoutes } from "./console/Http.ts"
import { McpRoutes } from "./mcp/Http.ts"
import { SystemHandlers } from "./system/Http.ts"
import { UserOpsHandlers } from "./userops/Http.ts"

/** Hiring's port onto the marketplace proxy (peer features: neither imports the other). */
const HiringMarketLive = Layer.effect(
  HiringMarket,
  Effect.gen(function*() {
    const marketplace = yield* Marketplace
    const wallets = yield* ManagedWallets
    return HiringMarket.of({
      agent: marketplace.getAgent,
      evaluator: Effect.map(marketplace.evaluator, (e) => Option.fromNullishOr(e.wallet)),
      managedWallet: wallets.get
    })
  })
).pipe(Layer.provide(MarketplaceAppServices))

export const HandlersLive = Layer.mergeAll(
  SystemHandlers,
  AuthHandlers,
  SessionHandlers,
  AccountsHandlers,
  PanicHandlers,
  GuardianHandlers,
  DelegationsHandlers,
  PermissionsHandlers,
  Ap2Handlers,
  ApprovalsHandlers,
  UserOpsHandlers,
  ActivityHandlers,
  NotificationsHandlers,
  MarketplaceAppLive,
  HiringAppLive.pipe(Layer.provide(HiringMarketLive)),
  LaunchpadHandlers.pipe(Layer.provide(LaunchpadLive)),
  // x402 payments under a grant, and their settlement as the chain follower sees it.
  PaymentsHandlers,
  DevHandlers,
  // Run with the relay whatever the handlers need: the chain follower (the record of what executed)
  // and the account rules' hooks (the frozen flag follows executed freezes).
  FollowerLive.pipe(Layer.provide(FollowerEntriesLive)),
  AccountRulesLive,
  // Guardians' approvals, starts and executions on the owner's log (and an executed recovery's new key).
  RecoveryWatcherLive
)

export const ApiRoutes = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide(HandlersLive),
  Layer.provide([ErrorEnvelopeLive, AuthorizationLive, InlineAuthorizationLive])
)

/** `/`, `/docs` and what the reference page loads (served here: it works offline). */
export const DocsRoute = pagesRoutes(Api)

/**
 * The edge (limits, envelope, outages) with its configuration; see `src/api/GlobalEnvelope.ts`.
 * Its rate limits are kept in the database, shared by every process on it.
 */
/** The routes the service answers: the contract's and the pages'. */
export const serviceRoutes = makeRouteTable(Api, documentRoutes)

/** Who a bearer token belongs to, for the edge's per-signer build limit (its port). */
const EdgeSessionsLive = Layer.effect(
  EdgeSessions,
  Effect.map(Sessions, (sessions) =>
    EdgeSessions.of({
      signerOf: (token) =>
        sessions.authenticate(token).pipe(
          Effect.map((s): string | undefined => s.address.toLowerCase()),
          Effect.orElseSucceed(() => undefined)
        )
    }))
)

export const EdgeLive = GlobalEnvelope.pipe(
  Layer.provide(Layer.mergeAll(
    EdgeConfig.layer,
    DatabaseOutage.layer,
    RateLimitStore.layerDatabase,
    Layer.succeed(ServiceRoutes, serviceRoutes),
    EdgeSessionsLive
  ))
)

export const AppLive = Layer.mergeAll(ApiRoutes, DocsRoute, ConsoleRoutes, McpRoutes, EdgeLive)

/**
 * Query parameters that are secrets: the managed-wallet connect `requestId` is a polling
 * handle that can fetch a login's session upstream, so it never goes into span attributes
 * (incoming request spans and outgoing upstream spans alike).
 */
export const RedactionLive = Layer.succeed(UrlParams.CurrentRedactedNames, [
  ...UrlParams.CurrentRedactedNames.defaultValue(),
  "requestId"
])

/** Server spans named by route (`GET /accounts/:accountId`), made only when spans are exported. */
export const SpanNamesLive = Layer.succeed(HttpMiddleware.SpanNameGenerator, (request) => spanNameOf(serviceRoutes, request.method, request.url))

/**
 * The access line is the edge's (`GlobalEnvelope.ts`), not the server's logger middleware:
 * a server with no middleware, when nothing exports spans, serves each request on Effect's
 * single-frame path (docs/performance.md, "GET /accounts", step 4).
 */
export const serveApp = HttpRouter.serve(AppLive, { disableLogger: true }).pipe(
  // `PeerPolicyLive`: who a request comes from (TRUSTED_PROXIES, PEER_IPV6_PREFIX), for the edge and the handlers.
  Layer.provide(Layer.mergeAll(RedactionLive, SpanNamesLive, PeerPolicyLive))
)
