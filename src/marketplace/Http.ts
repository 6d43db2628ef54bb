/**
 * Thin handlers for the `marketplace` (session) and `marketplaceStream`
 * (public) groups. Rules live in `Marketplace` and `StatsHub`.
 */
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { ManagedWalletsSql, MarketplaceCallersFromAccounts } from "./Stores.ts"
import { NotImplemented } from "../api/Errors.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { ManagedWallets, Marketplace, MarketplaceCallers, MarketplaceServiceLive } from "./Marketplace.ts"
import { MarketplaceUpstreamLive } from "./MarketplaceUpstream.ts"
import { StatsHub, StatsHubLive } from "./StatsHub.ts"

/** The operation builds wait for the chain/builder layer. */
const notYet = (what: string) =>
  Effect.fail(new NotImplemented({ message: `${what} is not available yet: it needs the operation builder.` }))

export const MarketplaceHandlers = HttpApiBuilder.group(
  Api,
  "marketplace",
  Effect.fn(function*(handlers) {
    const m = yield* Marketplace
    const callers = yield* MarketplaceCallers
    const signer = Effect.gen(function*() {
      return (yield* CurrentSigner).address
    })
    const callerAddresses = Effect.flatMap(signer, callers.addressesOf)

    return handlers.handleAll({
      listAgents: ({ query }) => m.listAgents({ cursor: query.cursor, limit: query.limit }),
      evaluator: () => m.evaluator,
      searchAgents: ({ query }) =>
        m.searchAgents({ query: query.query, chainIds: query.chainIds, topK: query.topK }),
      getAgent: ({ params }) => m.getAgent(params.wallet),
      hireBuild: () => notYet("Hiring"),
      listJobs: () => Effect.flatMap(callerAddresses, (addresses) => m.listJobs(addresses)),
      getJob: ({ params }) =>
        Effect.flatMap(callerAddresses, (addresses) => m.getJob(addresses, params.chainId, params.jobId)),
      createJobBuild: () => notYet("Job creation"),
      fundJobBuild: () => notYet("Job funding"),
      managedConnection: () => Effect.flatMap(signer, m.managedConnection),
      managedConnect: () => Effect.flatMap(signer, m.managedConnect),
      managedConnectStatus: ({ query }) => Effect.flatMap(signer, (s) => m.managedConnectStatus(s, query.requestId)),
      managedDepositBuild: () => notYet("The managed-wallet deposit")
    })
  })
)

export const MarketplaceStreamHandlers = HttpApiBuilder.group(
  Api,
  "marketplaceStream",
  Effect.fn(function*(handlers) {
    const hub = yield* StatsHub
    return handlers.handleAll({
      // A raw response, so heartbeats can be SSE comment lines (the schema encoder writes events only).
      stream: ({ query }) =>
        Effect.gen(function*() {
          const filter = yield* hub.parseFilter(query.wallets)
          yield* hub.admit
          return HttpServerResponse.stream(hub.sse(filter), {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
          })
        })
    })
  })
)

/** Services of the marketplace, without HTTP: what the handlers (and tests, benchmarks) need. */
export const MarketplaceServices = Layer.mergeAll(MarketplaceServiceLive, StatsHubLive).pipe(
  Layer.provideMerge(MarketplaceUpstreamLive),
  Layer.provideMerge(ManagedWallets.layerMemory),
  Layer.provideMerge(MarketplaceCallers.layerSignerOnly)
)

/**
 * Both handler groups with their services. Requires `HttpClient` (provide
 * `FetchHttpClient.layer`) and, like every protected group, the `Authorization`
 * middleware layer. To back the managed-wallet store or the caller's addresses
 * with SQL, build from `MarketplaceHandlers`/`MarketplaceStreamHandlers` and
 * provide other `ManagedWallets` / `MarketplaceCallers` layers.
 */
export const MarketplaceLive = Layer.mergeAll(MarketplaceHandlers, MarketplaceStreamHandlers).pipe(
  Layer.provide(MarketplaceServices)
)

/** What the service runs: the same handlers, with the stores backed by PostgreSQL and the accounts. */
export const MarketplaceAppLive = Layer.mergeAll(MarketplaceHandlers, MarketplaceStreamHandlers).pipe(
  Layer.provide(
    Layer.mergeAll(MarketplaceServiceLive, StatsHubLive).pipe(
      Layer.provideMerge(MarketplaceUpstreamLive),
      Layer.provideMerge(ManagedWalletsSql),
      Layer.provideMerge(MarketplaceCallersFromAccounts)
    )
  )
)
