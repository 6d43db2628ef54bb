/**
 * The public agent marketplace (ACP), as a read-only upstream.
 *
 * Every call has a per-attempt timeout; only transport faults (connection
 * refused/reset) are retried, a bounded number of times. A 5xx, a body that is
 * not JSON or not the expected shape → `UpstreamUnavailable` (502); no answer in
 * time → `UpstreamTimeout` (504). Never a fabricated result. It sends no
 * credential of ours and moves no money; the one token it ever sees (a connect
 * approval's session token) is used once to read the wallet address and dropped.
 */
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { UpstreamUnavailable } from "../api/Errors.ts"
import { getJson as upstreamGet, type UpstreamError, UpstreamMaxBodyBytes } from "../api/Upstream.ts"
import type { Address } from "../domain/Primitives.ts"
import type { Agent } from "./Domain.ts"
import {
  isAddress,
  isAgentList,
  mapAgent,
  mapAgents,
  mapJob,
  mapJobs,
  type OwnedJob,
  RawAuthStatus,
  RawAuthUrl,
  RawListMeta,
  RawLiteAgent,
  unwrapData
} from "./UpstreamMapping.ts"

export type { UpstreamError }

export interface MarketplaceUpstreamConfig {
  /** Base of the marketplace REST API, including any `/api` prefix. */
  readonly apiUrl: string
  /** Base of the device-code connect endpoints (`/auth/lite/...`); defaults to `apiUrl`. */
  readonly authUrl: string
  /** Per-attempt limit (connect + headers + body). */
  readonly timeout: Duration.Duration
  /** Extra attempts after a transport fault (never after a status or a timeout). */
  readonly retries: number
}

export const MarketplaceUpstreamConfig: Config.Config<MarketplaceUpstreamConfig> = Config.all({
  apiUrl: Config.String("MARKETPLACE_API_URL").pipe(Config.withDefault("https://api.acp.virtuals.io")),
  authUrl: Config.option(Config.String("MARKETPLACE_AUTH_URL")),
  timeout: Config.Duration("MARKETPLACE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5))),
  retries: Config.Int("MARKETPLACE_RETRIES").pipe(Config.withDefault(2))
}).pipe(
  Config.map(({ apiUrl, authUrl, timeout, retries }) => ({
    apiUrl: apiUrl.replace(/\/+$/, ""),
    authUrl: Option.getOrElse(authUrl, () => apiUrl).replace(/\/+$/, ""),
    timeout,
    retries: Math.max(0, Math.min(retries, 5))
  }))
)

export type ConnectStatus =
  | { readonly _tag: "Pending" }
  | { readonly _tag: "Approved"; readonly walletAddress: Address }
  | { readonly _tag: "Expired" }

export interface LeaderboardSlice {
  readonly agents: ReadonlyArray<Agent>
  /** For each agent, its row index within the slice (rows without a valid wallet are dropped). */
  readonly positions: ReadonlyArray<number>
  /** Upstream's count of listed agents (before dropping those without a valid wallet), when it says. */
  readonly total: number | undefined
  /** How many upstream rows the slice covered (dropped ones included): to advance an offset. */
  readonly rows: number
}

export class MarketplaceUpstream extends Context.Service<MarketplaceUpstream, {
  /** Agents ordered by total volume, descending; `start` is an offset into that order. */
  leaderboard(options: { readonly start: number; readonly limit: number }): Effect.Effect<LeaderboardSlice, UpstreamError>
  /** Semantic search, forwarded as is. */
  search(options: {
    readonly query: string
    readonly chainIds?: ReadonlyArray<number> | undefined
    readonly topK?: number | undefined
  }): Effect.Effect<ReadonlyArray<Agent>, UpstreamError>
  agentByWallet(wallet: Address): Effect.Effect<Option.Option<Agent>, UpstreamError>
  /** Jobs whose client is one of `clientAddresses` (the caller re-checks ownership). */
  jobs(clientAddresses: ReadonlyArray<Address>): Effect.Effect<ReadonlyArray<OwnedJob>, UpstreamError>
  job(chainId: number, jobId: string): Effect.Effect<Option.Option<OwnedJob>, UpstreamError>
  connectStart: Effect.Effect<{ readonly authUrl: string; readonly requestId: string }, UpstreamError>
  connectStatus(requestId: string): Effect.Effect<ConnectStatus, UpstreamError>
}>()("das/marketplace/MarketplaceUpstream") {}

const unavailable = (message: string, details?: Record<string, string | number>) =>
  new UpstreamUnavailable(details === undefined ? { message } : { message, details })

type Got = { readonly _tag: "NotFound"; readonly status: number } | { readonly _tag: "Body"; readonly json: Schema.Json }

export const make = Effect.fn("MarketplaceUpstream.make")(function*(config: MarketplaceUpstreamConfig) {
  const client = yield* HttpClient.HttpClient
  const maxBodyBytes = yield* UpstreamMaxBodyBytes

  /** One GET through the shared upstream helper; 404/410 are answers, other non-2xx are faults. */
  const getJson = (
    url: string,
    urlParams: Record<string, string>,
    bearer?: Redacted.Redacted<string>
  ): Effect.Effect<Got, UpstreamError> => {
    let request = HttpClientRequest.get(url).pipe(HttpClientRequest.setUrlParams(urlParams))
    if (bearer !== undefined) request = HttpClientRequest.bearerToken(request, Redacted.value(bearer))
    return upstreamGet(client, request, {
      name: "The marketplace",
      timeout: config.timeout,
      retries: config.retries,
      maxBodyBytes,
      answers: [404, 410]
    }).pipe(
      Effect.map((answer): Got =>
        answer._tag === "Status" ? { _tag: "NotFound", status: answer.status } : { _tag: "Body", json: answer.json }
      )
    )
  }

  const api = (path: string) => `${config.apiUrl}${path}`
  const auth = (path: string) => `${config.authUrl}${path}`
  const body = (g: Got, what: string): Effect.Effect<Schema.Json, UpstreamUnavailable> =>
    g._tag === "Body"
      ? Effect.succeed(g.json)
      : Effect.fail(unavailable(`The marketplace has no ${what} (HTTP ${g.status}).`, { upstreamStatus: g.status }))
  // A list none of whose rows maps is a broken answer, not "no agents" (never 200 with an empty list).
  const agentList = (json: Schema.Json) => {
    if (!isAgentList(json)) return Effect.fail(unavailable("The marketplace answered an agent list in an unexpected shape."))
    const agents = mapAgents(json)
    const rows = unwrapData(json) as ReadonlyArray<Schema.Json>
    return rows.length > 0 && agents.length === 0
      ? Effect.fail(unavailable("The marketplace answered an agent list none of whose rows is an agent."))
      : Effect.succeed(agents)
  }

  const leaderboard = Effect.fn("MarketplaceUpstream.leaderboard")(function*(options: {
    readonly start: number
    readonly limit: number
  }) {
    // Strapi-style listing, as the older `/agents?filters[...]` call and the launchpad use.
    const got = yield* getJson(api("/agents"), {
      "sort[0]": "grossAgenticAmount:desc",
      "pagination[start]": String(options.start),
      "pagination[limit]": String(options.limit)
    })
    const json = yield* body(got, "agent listing")
    const list = unwrapData(json)
    if (!Array.isArray(list)) return yield* unavailable("The marketplace answered an agent list in an unexpected shape.")
    const agents: Array<Agent> = []
    const positions: Array<number> = []
    list.forEach((row, i) => {
      const agent = mapAgent(row)
      if (Option.isSome(agent)) {
        agents.push(agent.value)
        positions.push(i)
      }
    })
    if (list.length > 0 && agents.length === 0) {
      return yield* unavailable("The marketplace answered an agent list none of whose rows is an agent.")
    }
    const meta = Schema.decodeUnknownOption(RawListMeta)(json)
    const total = Option.match(meta, {
      onNone: () => undefined,
      onSome: (m) => m.meta?.pagination?.total ?? undefined
    })
    return { agents, positions, total, rows: list.length }
  })

  const search = Effect.fn("MarketplaceUpstream.search")(function*(options: {
    readonly query: string
    readonly chainIds?: ReadonlyArray<number> | undefined
    readonly topK?: number | undefined
  }) {
    const params: Record<string, string> = { query: options.query }
    if (options.chainIds !== undefined && options.chainIds.length > 0) params.chainIds = options.chainIds.join(",")
    if (options.topK !== undefined) params.topK = String(options.topK)
    const got = yield* getJson(api("/agents/search"), params)
    return yield* agentList(yield* body(got, "search endpoint"))
  })

  const agentByWallet = Effect.fn("MarketplaceUpstream.agentByWallet")(function*(wallet: Address) {
    const got = yield* getJson(api(`/agents/wallet/${wallet}`), {})
    if (got._tag === "NotFound") return Option.none<Agent>()
    const data = unwrapData(got.json)
    if (data === null) return Option.none<Agent>()
    const agent = mapAgent(data)
    if (Option.isNone(agent)) {
      return yield* unavailable("The marketplace answered an agent without a valid wallet address.")
    }
    // Identity is the wallet: an answer for another wallet is not this agent.
    if (agent.value.walletAddress.toLowerCase() !== wallet.toLowerCase()) {
      return yield* unavailable("The marketplace answered a different agent than the wallet asked for.")
    }
    return agent
  })

  const jobs = Effect.fn("MarketplaceUpstream.jobs")(function*(clientAddresses: ReadonlyArray<Address>) {
    if (clientAddresses.length === 0) return []
    const got = yield* getJson(api("/jobs"), { clientAddress: clientAddresses.join(",") })
    const json = yield* body(got, "job listing")
    const rows = unwrapData(json)
    if (!Array.isArray(rows)) {
      return yield* unavailable("The marketplace answered a job list in an unexpected shape.")
    }
    const mapped = mapJobs(json)
    if (rows.length > 0 && mapped.length === 0) {
      return yield* unavailable("The marketplace answered a job list none of whose rows is a job.")
    }
    return mapped
  })

  const job = Effect.fn("MarketplaceUpstream.job")(function*(chainId: number, jobId: string) {
    const got = yield* getJson(api(`/jobs/${chainId}/${encodeURIComponent(jobId)}`), {})
    if (got._tag === "NotFound") return Option.none<OwnedJob>()
    const data = unwrapData(got.json)
    if (data === null) return Option.none<OwnedJob>()
    const mapped = mapJob(data, chainId)
    if (Option.isNone(mapped)) return yield* unavailable("The marketplace answered a job in an unexpected shape.")
    if (mapped.value.job.jobId !== jobId || mapped.value.job.chainId !== chainId) {
      return yield* unavailable("The marketplace answered a different job than the one asked for.")
    }
    return mapped
  })

  const connectStart = Effect.gen(function*() {
    const got = yield* getJson(auth("/auth/lite/auth-url"), {})
    const json = unwrapData(yield* body(got, "connect endpoint"))
    return yield* Schema.decodeUnknownEffect(RawAuthUrl)(json).pipe(
      Effect.mapError(() => unavailable("The marketplace answered the connect start in an unexpected shape."))
    )
  }).pipe(Effect.withSpan("MarketplaceUpstream.connectStart"))

  const connectStatus = Effect.fn("MarketplaceUpstream.connectStatus")(function*(requestId: string) {
    const got = yield* getJson(auth("/auth/lite/auth-status"), { requestId })
    if (got._tag === "NotFound") return { _tag: "Expired" } as ConnectStatus
    const data = unwrapData(got.json)
    if (data === null) return { _tag: "Pending" } as ConnectStatus
    const status = yield* Schema.decodeUnknownEffect(RawAuthStatus)(data).pipe(
      Effect.mapError(() => unavailable("The marketplace answered the connect status in an unexpected shape."))
    )
    if (isAddress(status.walletAddress)) return { _tag: "Approved", walletAddress: status.walletAddress } as ConnectStatus
    const token = status.token ?? status.sessionToken
    if (token === null || token === undefined || token === "") return { _tag: "Pending" } as ConnectStatus
    // Approved with a session token: read the agent wallet with it once, then let it go.
    const secret = Redacted.make(token)
    const agents = yield* getJson(auth("/agents/lite"), {}, secret).pipe(
      Effect.flatMap((g) => body(g, "agent for this login"))
    )
    const list = unwrapData(agents)
    const first = Array.isArray(list) && list.length > 0
      ? Schema.decodeUnknownOption(RawLiteAgent)(list[0])
      : Option.none()
    const wallet = Option.flatMap(first, (a) => isAddress(a.walletAddress) ? Option.some(a.walletAddress) : Option.none())
    if (Option.isNone(wallet)) {
      return yield* unavailable("The marketplace approved the login but named no agent wallet.")
    }
    return { _tag: "Approved", walletAddress: wallet.value } as ConnectStatus
  })

  return MarketplaceUpstream.of({ leaderboard, search, agentByWallet, jobs, job, connectStart, connectStatus })
})

/** Requires `HttpClient` (the lead provides `FetchHttpClient.layer` at the edge). */
export const MarketplaceUpstreamLive: Layer.Layer<MarketplaceUpstream, Config.ConfigError, HttpClient.HttpClient> =
  Layer.effect(
    MarketplaceUpstream,
    Effect.gen(function*() {
      return yield* make(yield* MarketplaceUpstreamConfig)
    })
  )
