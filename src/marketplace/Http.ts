/**
 * Thin handlers for the `marketplace` (session) and `marketplaceStream`
 * (public) groups. Rules live in `Marketplace` and `StatsHub`.
 */
import { Effect, Exit, Layer, Option, Result, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { NodeRoutes } from "../api/NodeServer.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { LocalJobs } from "./LocalJobs.ts"
import { AgentIdentities } from "./Identities.ts"
import { ManagedWalletsSql, MarketplaceCallersFromAccounts } from "./Stores.ts"
import { ManagedWallets, Marketplace, MarketplaceCallers, MarketplaceServiceLive } from "./Marketplace.ts"
import { MarketplaceApi, MarketplaceStreamApi, StreamQuery } from "./Api.ts"
import { MarketplaceUpstreamLive } from "./MarketplaceUpstream.ts"
import { nodeResponse, sseHeaders } from "./SseFanout.ts"
import { StatsHub, StatsHubLive } from "./StatsHub.ts"

export const MarketplaceHandlers = HttpApiBuilder.group(
  contractOf(MarketplaceApi),
  "marketplace",
  Effect.fn(function*(handlers) {
    const m = yield* Marketplace
    const callers = yield* MarketplaceCallers
    const localJobs = yield* LocalJobs
    const identities = yield* AgentIdentities
    const signer = Effect.gen(function*() {
      return (yield* CurrentSigner).address
    })
    const callerAddresses = Effect.flatMap(signer, callers.addressesOf)

    return handlers.handleAll({
      listAgents: ({ query }) => m.listAgents({ cursor: query.cursor, limit: query.limit }),
      evaluator: () => m.evaluator,
      searchAgents: ({ query }) =>
        m.searchAgents({ query: query.query, chainIds: query.chainIds, topK: query.topK }),
      getAgent: ({ params }) =>
        Effect.flatMap(m.getAgent(params.wallet), (agent) =>
          Effect.map(identities.of(agent.walletAddress), (ids) => (ids.length === 0 ? agent : { ...agent, erc8004: ids }))),
      listJobs: () => Effect.flatMap(callerAddresses, (addresses) => m.listJobs(addresses)),
      getJob: ({ params }) =>
        Effect.flatMap(callerAddresses, (addresses) =>
          localJobs.serves(params.chainId)
            ? localJobs.get(addresses, params.chainId, params.jobId)
            : m.getJob(addresses, params.chainId, params.jobId)),
      managedConnection: () => Effect.flatMap(signer, m.managedConnection),
      managedConnect: () => Effect.flatMap(signer, m.managedConnect),
      managedConnectStatus: ({ query }) => Effect.flatMap(signer, (s) => m.managedConnectStatus(s, query.requestId))
    })
  })
)

export const MarketplaceStreamHandlers = HttpApiBuilder.group(
  contractOf(MarketplaceStreamApi),
  "marketplaceStream",
  Effect.fn(function*(handlers) {
    const hub = yield* StatsHub
    return handlers.handleAll({
      // Served on the node response itself: the hub writes the head, the snapshot, then each
      // change's shared bytes from its poller (no fiber or Effect stream per subscriber; see
      // SseFanout.ts). Validation and capacity answer the envelope before anything is written.
      // The handler completes when the response closes; the framework then writes nothing.
      // On the service's `NodeServer` the route below takes the streams it can serve, and this
      // handler answers only the refusals (and serves every stream on a plain node server).
      stream: ({ query, request }) =>
        request.method === "HEAD"
          // The head alone, now: a body-less response is never flushed by the stream's writes, so it
          // would hang open until the client gave up.
          ? hub.parseFilter(query.wallets).pipe(Effect.as(HttpServerResponse.empty({ status: 200, headers: sseHeaders })))
          : hub.parseFilter(query.wallets).pipe(
          Effect.tap(() => hub.admit),
          Effect.flatMap((filter) => Effect.flatMap(nodeResponse, (res) => hub.serve(filter, res))),
          // Written by nobody (the response has closed); it tells the access log the 200 that was sent.
          Effect.as(HttpServerResponse.empty({ status: 200 }))
        )
    })
  })
)

/**
 * The stream served by the node server itself, when the app runs on `NodeServer` (otherwise
 * nothing): the query decoded by the endpoint's own Schema, the wallets and capacity checked
 * by the hub's plain code, then the response belongs to the hub and no fiber is left for it.
 * What it would refuse goes on to the handler above, which answers the envelope as ever.
 */
export const MarketplaceStreamRoute = Layer.effectDiscard(Effect.gen(function*() {
  const routes = yield* Effect.serviceOption(NodeRoutes)
  if (Option.isNone(routes)) return
  const hub = yield* StatsHub
  const decodeQuery = Schema.decodeUnknownExit(Schema.toCodecArrayFromSingle(StreamQuery))
  yield* routes.value.add({
    method: "GET",
    path: MarketplaceStreamApi.endpoints.stream.path,
    serve: (query, _request, response) => {
      const decoded = decodeQuery(query)
      if (Exit.isFailure(decoded)) return false
      const filter = hub.filterOf(decoded.value.wallets)
      return Result.isSuccess(filter) && hub.attach(filter.success, response)
    },
    close: hub.endAll
  })
}))

/**
 * Services of the marketplace, without HTTP and without a chain: what the handlers (and
 * tests, benchmarks) need. Every job is then read from the upstream (`LocalJobs.layerNone`);
 * the operation builds are hiring's (`hiring/`), served only with a chain.
 */
export const MarketplaceServices = Layer.mergeAll(MarketplaceServiceLive, StatsHubLive, LocalJobs.layerNone, AgentIdentities.layerNone).pipe(
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
export const MarketplaceLive = Layer.mergeAll(MarketplaceHandlers, MarketplaceStreamHandlers, MarketplaceStreamRoute).pipe(
  Layer.provide(MarketplaceServices)
)

/**
 * The marketplace's services as the service runs them: the managed wallets in PostgreSQL, the
 * caller's addresses from the accounts, and the jobs of the local ACP contracts read from their
 * chains. Shared (one instance) by the handlers below and the hiring port the composition builds
 * from them (`Server.ts`). Needs SqlClient, HttpClient, Accounts and the chains.
 */
export const MarketplaceAppServices = Layer.mergeAll(MarketplaceServiceLive, StatsHubLive, LocalJobs.layer, AgentIdentities.layer).pipe(
  Layer.provideMerge(MarketplaceUpstreamLive),
  Layer.provideMerge(Layer.mergeAll(ManagedWalletsSql, MarketplaceCallersFromAccounts)),
  Layer.provide(TokenRegistry.layer)
)

/** What the service runs: the same handlers on `MarketplaceAppServices`. */
export const MarketplaceAppLive = Layer.mergeAll(MarketplaceHandlers, MarketplaceStreamHandlers, MarketplaceStreamRoute).pipe(
  Layer.provide(MarketplaceAppServices)
)
