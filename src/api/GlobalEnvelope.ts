/**
 * Router-wide middleware for what happens outside any endpoint: the `/v1` prefix
 * (the contract is served with and without it), the edge's limits (URL length, body
 * size, rate limits), unknown routes (404) and wrong methods (405), `OPTIONS`, and
 * defects (500, logged with their cause, never shown to the client). Every one
 * answers with the contract's envelope and the request's id (`currentRequestId`). The
 * edge also writes each request's access line.
 */
import { ByteSize, Cause, Context, Duration, Effect, Exit, Logger, LogLevel, Option, References, type Types } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpServerError } from "effect/http"
import { PeerPolicy, requestPeerKey } from "../platform/ClientAddress.ts"
import { Metrics, type MetricsShape } from "../platform/Metrics.ts"
import { makeMemoryStore, type RateDecision, rateLimitHeaders, type RateRule, RateLimitStore } from "../platform/RateLimit.ts"
import { classifySqlError, DatabaseOutage, findSqlError } from "./DatabaseOutage.ts"
import { EdgeConfig } from "./EdgeConfig.ts"
import { isWellEncoded, stripVersionPrefix } from "./EdgeUrl.ts"
import { everyAnswer, isHtml, pageHeaders } from "./PageSecurity.ts"
import { currentRequestId, isApiError, responseIdHeaders, withRequestId } from "./Envelope.ts"
import type { ApiError } from "./Errors.ts"
import {
  BadRequest,
  InternalError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  retryAfterOf,
  ServiceUnavailable,
  statusOf,
  toEnvelope,
  TooManyRequests,
  UnsupportedMediaType,
  UriTooLong
} from "./Errors.ts"
import { isBuildRoute, type RouteInfo, ServiceRoutes } from "./Routes.ts"

/** The envelope as a response, with `Retry-After` when the error says when to come back. */
export const envelopeResponse = (e: ApiError) => {
  const response = HttpServerResponse.jsonUnsafe(toEnvelope(e), { status: statusOf(e) })
  const retryAfter = retryAfterOf(e)
  const allow = e.details?.allow
  const withAllow = Array.isArray(allow) ? HttpServerResponse.setHeader(response, "allow", allow.join(", ")) : response
  return retryAfter === undefined ? withAllow : HttpServerResponse.setHeader(withAllow, "retry-after", String(retryAfter))
}

const requestIdField = Effect.map(currentRequestId, (requestId) => (requestId === undefined ? {} : { requestId }))

const bearerOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const header = request.headers.authorization
  const match = header === undefined ? null : /^bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}

/** HTTP/1.1: a request without either header has no body (nothing for MaxBodySize to limit). */
const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["content-length"] !== undefined || request.headers["transfer-encoding"] !== undefined

const isJson = (contentType: string | undefined) =>
  contentType !== undefined && /^application\/(.+\+)?json\b/i.test(contentType.trim())

/**
 * Who a bearer token belongs to, for the per-signer build limit: provided at the top from the
 * sessions (src/Services.ts); the edge sits below auth. Absent (a bare router in tests): builds
 * are limited per token.
 */
export class EdgeSessions extends Context.Service<EdgeSessions, {
  readonly signerOf: (token: string) => Effect.Effect<string | undefined>
}>()("das/api/EdgeSessions") {}

const EdgeMiddleware = Effect.gen(function*() {
  const routes = yield* ServiceRoutes
  // Read from Config when no EdgeConfig is provided (a bare router in tests).
  const provided = yield* Effect.serviceOption(EdgeConfig)
  const edge = Option.isSome(provided) ? provided.value : yield* Effect.orDie(EdgeConfig.config)
  // Optional, so the envelope also wraps a bare router (tests): without them builds are
  // limited per token and outages are not tracked.
  const sessions = yield* Effect.serviceOption(EdgeSessions)
  const outage = yield* Effect.serviceOption(DatabaseOutage)
  // Shared by every process on the database when the app has one; this process's memory otherwise.
  const store = Option.getOrElse(yield* Effect.serviceOption(RateLimitStore), makeMemoryStore)
  const metrics = yield* Effect.serviceOption(Metrics)
  // Who a request comes from, for the per-IP limits: its peer key (docs/edge.md, "Peers").
  const peers = yield* Effect.service(PeerPolicy)
  const clientIp = (request: HttpServerRequest.HttpServerRequest): string => requestPeerKey(peers, request) ?? "unknown"
  const httpMetrics = Option.isSome(metrics) ? makeHttpMetrics(metrics.value) : undefined
  const refusals = Option.isSome(metrics)
    ? metrics.value.counter({
      name: "das_rate_limit_refusals_total",
      help: "Requests refused by a rate limit (429), by limit: nonce and session per client address, builds per signer",
      labelNames: ["bucket"]
    })
    : undefined
  const maxBody = ByteSize.bytes(BigInt(edge.maxBodyBytes))
  const retryAfterSeconds = Math.max(1, Math.ceil(Duration.toSeconds(edge.unavailableRetryAfter)))

  const render = (cause: Cause.Cause<unknown>) =>
    Effect.gen(function*() {
      const rid = yield* requestIdField
      const failure = cause.reasons.find(Cause.isFailReason)?.error
      const defect = cause.reasons.find(Cause.isDieReason)?.defect
      const serverError = failure instanceof HttpServerError.HttpServerError
        ? failure
        : defect instanceof HttpServerError.HttpServerError
        ? defect
        : undefined
      if (serverError !== undefined) {
        const reason = serverError.reason
        if (reason._tag === "RouteNotFound") {
          return reason.description?.includes("maxParamLength")
            ? envelopeResponse(new BadRequest({ message: "A path parameter is too long", ...rid }))
            : envelopeResponse(new NotFound({ message: "No such endpoint", ...rid }))
        }
        if (reason._tag === "RequestParseError") {
          return reason.reason === "BodyTooLarge"
            ? envelopeResponse(tooLarge(rid))
            : envelopeResponse(new BadRequest({ message: "The request could not be read", ...rid }))
        }
      }
      if (isApiError(failure)) return envelopeResponse(withRequestId(failure, rid.requestId))
      const sqlError = findSqlError(cause)
      if (sqlError !== undefined) {
        switch (classifySqlError(sqlError)) {
          case "unavailable":
            if (Option.isSome(outage)) yield* outage.value.report(sqlError)
            return envelopeResponse(
              new ServiceUnavailable({
                message: "The database is unavailable; try again shortly",
                details: { retryAfterSeconds },
                ...rid
              })
            )
          case "unstorable":
            return envelopeResponse(
              new BadRequest({ message: "The request holds a value that cannot be stored", ...rid })
            )
          case "bug":
            break
        }
      }
      yield* Effect.logError("unhandled failure", cause)
      return envelopeResponse(new InternalError({ message: "Internal error", ...rid }))
    })

  const tooLarge = (rid: { readonly requestId?: string }) =>
    new PayloadTooLarge({
      message: `The request body is larger than ${edge.maxBodyBytes} bytes`,
      details: { maxBytes: edge.maxBodyBytes },
      ...rid
    })

  const limited = (retryAfter: number, what: string, rid: { readonly requestId?: string }) =>
    new TooManyRequests({
      message: `Too many ${what}; try again in ${retryAfter} s`,
      details: { retryAfterSeconds: retryAfter },
      ...rid
    })

  /** A rate-limited request: one token from `key`'s bucket; refused past the limit. */
  const take = (bucket: string, rule: RateRule, key: string, what: string): Effect.Effect<Admission> =>
    Effect.map(store.take(bucket, rule, key), (decision) => {
      if (!decision.allowed) refusals?.inc({ bucket })
      return { refused: decision.allowed ? undefined : limited(decision.retryAfterSeconds, what, {}), decision }
    })

  /**
   * What the edge refuses before any endpoint runs; `undefined`: let it through. Plain code on
   * the way through (every request passes here); the refusal gets its `requestId` from the caller.
   */
  const admit = (
    request: HttpServerRequest.HttpServerRequest,
    url: string,
    seen: Seen
  ): ApiError | undefined | Effect.Effect<Admission> => {
    if (url.length > edge.maxUrlLength) {
      return new UriTooLong({ message: `The URL is longer than ${edge.maxUrlLength} characters` })
    }
    if (!isWellEncoded(url)) return new BadRequest({ message: "The URL has malformed percent-encoding" })
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > edge.maxBodyBytes) return tooLarge({})
    const route = routes.find(request.method, url)
    seen.route = route
    if (route === undefined) {
      const allow = routes.allowed(url)
      if (allow.length > 0 && request.method !== "OPTIONS") {
        return new MethodNotAllowed({
          message: `${request.method} is not allowed here; allowed: ${allow.join(", ")}`,
          details: { allow }
        })
      }
      return undefined
    }
    if (route.method === "POST" && route.path === "/auth/nonce" && edge.nonceRate.limit > 0) {
      return take("nonce", edge.nonceRate, clientIp(request), "sign-in nonces from this address")
    }
    if (route.method === "POST" && route.path === "/auth/session" && edge.sessionRate.limit > 0) {
      return take("session", edge.sessionRate, clientIp(request), "sign-in attempts from this address")
    }
    if (isBuildRoute(route) && edge.buildRate.limit > 0) {
      const token = bearerOf(request)
      // No or a bad token: the endpoint answers 401 itself.
      if (token === undefined) return undefined
      const signer = Option.isNone(sessions)
        ? Effect.succeed(`token:${token}`)
        : sessions.value.signerOf(token)
      return Effect.flatMap(signer, (signer) =>
        signer === undefined
          ? Effect.succeed(notLimited)
          : take("builds", edge.buildRate, signer, "builds for this signer"))
    }
    return undefined
  }

  /** The refusal as the envelope, with the request's id. */
  const refuse = (refused: ApiError) =>
    Effect.map(currentRequestId, (requestId) => envelopeResponse(withRequestId(refused, requestId)))

  /** The framework's own non-envelope answers (415 text, 413/405 empty) as envelopes. */
  const normalize = (response: HttpServerResponse.HttpServerResponse) => {
    const contentType = "contentType" in response.body ? response.body.contentType : undefined
    if (response.status < 400 || isJson(contentType)) return Effect.succeed(response)
    switch (response.status) {
      case 413:
        return refuse(tooLarge({}))
      case 415:
        return refuse(new UnsupportedMediaType({ message: "The request body must be application/json" }))
      default:
        return Effect.succeed(response)
    }
  }

  const renderUnlessInterrupted = (cause: Cause.Cause<unknown>) =>
    Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : render(cause)

  /**
   * The access line, as Effect's `HttpMiddleware.logger` writes it (message, method, path,
   * status, the `http.span` duration since `start`), plus the `requestId` of an error. The edge
   * writes it rather than the server's logger middleware: with any middleware there, Effect
   * serves every request on its slower path, with a server span nobody sees when nothing
   * exports spans (docs/performance.md, "GET /accounts", step 4). Its annotations and log span
   * are set in one context update, and none when no logger is installed.
   */
  const withLogContext = (
    line: Effect.Effect<void>,
    annotations: Record<string, unknown>,
    spans: ReadonlyArray<[label: string, timestamp: number]>
  ) =>
    Effect.updateContext(line, (context: Context.Context<never>) =>
      Context.add(Context.add(context, References.CurrentLogAnnotations, annotations), References.CurrentLogSpans, spans))

  const accessSeverity: LogLevel.Severity | undefined = edge.accessLogLevel === "None"
    ? undefined
    : edge.accessLogLevel === "All"
    ? "Trace"
    : edge.accessLogLevel
  const logAccess = Effect.logWithLevel(accessSeverity ?? "Info")

  const accessLine = (
    request: HttpServerRequest.HttpServerRequest,
    exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>,
    start: number
  ) =>
    Effect.withFiber((fiber) => {
      if (fiber.getRef(Logger.CurrentLoggers).size === 0) return Effect.void
      const failed = Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)
      // Below the minimum level: nothing to build (every request passes here).
      if (!failed && (accessSeverity === undefined || LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), accessSeverity))) {
        return Effect.void
      }
      const status = Exit.isSuccess(exit) ? exit.value.status : failed ? 500 : 499
      const line = failed
        ? Effect.logError("Sent HTTP response", (exit as Exit.Failure<unknown, unknown>).cause)
        : logAccess("Sent HTTP response")
      const fields = { "http.method": request.method, "http.url": pathOf(request.url), "http.status": status }
      const spans: ReadonlyArray<[label: string, timestamp: number]> = [["http.span", start], ...fiber.getRef(References.CurrentLogSpans)]
      const annotations = { ...fiber.getRef(References.CurrentLogAnnotations), ...fields }
      return status < 400
        ? withLogContext(line, annotations, spans)
        : Effect.flatMap(currentRequestId, (requestId) =>
          withLogContext(line, requestId === undefined ? annotations : { ...annotations, requestId }, spans))
    })

  /** The router's answer, its failures as envelopes (or `OPTIONS`, or the edge's refusal). */
  const proceed = (
    original: HttpServerRequest.HttpServerRequest,
    request: HttpServerRequest.HttpServerRequest,
    url: string,
    httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>,
    refused: ApiError | undefined
  ) => {
    if (refused !== undefined) return refuse(refused)
    if (request.method === "OPTIONS") {
      const allow = routes.allowed(url)
      if (allow.length > 0) {
        return Effect.succeed(HttpServerResponse.empty({ status: 204, headers: { allow: allow.join(", ") } }))
      }
    }
    // Each `provideService` copies the fiber's whole context (every service of the app),
    // and a parked request (an open stream) keeps the copies: only what changes is provided.
    const withRequest = request === original
      ? httpEffect
      : Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, request)
    const limited = hasBody(request) ? Effect.provideService(withRequest, HttpIncomingMessage.MaxBodySize, maxBody) : withRequest
    return limited.pipe(
      Effect.catchCause(renderUnlessInterrupted),
      Effect.flatMap(normalize)
    )
  }

  /**
   * What the edge answers. No named function is made per request on this path: tsx's transform
   * gives each one its name as it is made (`__name`, a property definition), ≈ 1 µs apiece.
   */
  const answer = (
    original: HttpServerRequest.HttpServerRequest,
    httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>,
    seen: Seen
  ) => {
    const url = stripVersionPrefix(original.url)
    const request = url === original.url ? original : original.modify({ url })
    const admitted = admit(request, url, seen)
    // An ApiError is itself yieldable (an Effect): tell it apart from a rate limit's lookup first.
    return admitted === undefined || isApiError(admitted)
      ? proceed(original, request, url, httpEffect, admitted)
      : Effect.flatMap(admitted as Effect.Effect<Admission>, (a) =>
        a.decision === undefined
          ? proceed(original, request, url, httpEffect, a.refused)
          : Effect.map(
            proceed(original, request, url, httpEffect, a.refused),
            (response) => HttpServerResponse.setHeaders(response, rateLimitHeaders(a.decision!))
          ))
  }

  /**
   * `nosniff` on every answer; on an HTML page its Content-Security-Policy and the frame and
   * referrer headers (src/api/PageSecurity.ts), made once per page body (pages are built once).
   */
  const pages = new WeakMap<object, Readonly<Record<string, string>>>()
  const securityHeaders = (response: HttpServerResponse.HttpServerResponse): Readonly<Record<string, string>> => {
    const body = response.body
    if (body._tag !== "Uint8Array" || !isHtml(body.contentType)) return everyAnswer
    let headers = pages.get(body)
    if (headers === undefined) {
      const own = response.headers["content-security-policy"]
      pages.set(body, headers = pageHeaders(body.text ?? new TextDecoder().decode(body.body), own))
    }
    return headers
  }

  /**
   * Headers every answer carries: `x-request-id` (the `requestId` of an error's envelope and of
   * the access line; `traceparent` too when spans are exported), and on a 401 the
   * `WWW-Authenticate` challenge of a bearer token (RFC 6750).
   */
  const stamp = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) =>
    Effect.map(responseIdHeaders, (ids) => {
      // One header update, not two (each copies the response and its headers); the same order.
      const stamped = HttpServerResponse.setHeaders(response, { ...securityHeaders(response), ...ids })
      return response.status !== 401
        ? stamped
        : HttpServerResponse.setHeader(
          stamped,
          "www-authenticate",
          bearerOf(request) === undefined ? "Bearer" : "Bearer error=\"invalid_token\""
        )
    })

  // Written with plain combinators, not a generator: every request runs through here.
  return (httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (original) => {
      const start = Date.now()
      const seen: Seen = { route: undefined }
      return Effect.suspend(() => answer(original, httpEffect, seen)).pipe(
        Effect.catchCause(renderUnlessInterrupted),
        Effect.flatMap((response) => stamp(original, response)),
        Effect.onExit((exit) => {
          if (httpMetrics !== undefined) httpMetrics.record(original.method, seen.route, exitStatus(exit), start)
          return accessLine(original, exit, start)
        })
      )
    }) as Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest>
})

/** What a request resolved to, read when it ends (its route, for the metrics). */
interface Seen {
  route: RouteInfo | undefined
}

const exitStatus = (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>): number =>
  Exit.isSuccess(exit) ? exit.value.status : Cause.hasInterruptsOnly(exit.cause) ? 499 : 500

/**
 * Requests per route: count, errors (by status) and latency, in one histogram
 * (`das_http_server_request_duration_seconds{method,route,status}`: its `_count` is the request
 * count, by status). The route is the template (`/accounts/:accountId`), `unmatched` for a path
 * no route answers: the label values stay few, whatever clients send.
 */
const makeHttpMetrics = (metrics: MetricsShape) => {
  const histogram = metrics.boundHistogram({
    name: "das_http_server_request_duration_seconds",
    help: "HTTP requests answered by the service, by method, route template and status, and how long each took",
    labelNames: ["method", "route", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
  })
  // One bound series per label set, found by one string: no label object validated and hashed
  // per request (prom-client's `labels(...).observe` does both on every call).
  const children = new Map<string, { readonly observe: (value: number) => void }>()
  return {
    record: (method: string, route: RouteInfo | undefined, status: number, start: number) => {
      const path = route === undefined ? "unmatched" : route.path
      const key = `${method} ${path} ${status}`
      let child = children.get(key)
      if (child === undefined) children.set(key, child = histogram.bind({ method, route: path, status: String(status) }))
      child.observe((Date.now() - start) / 1000)
    }
  }
}

/** What the edge decided about a rate-limited request: refused or not, and the bucket's state for the headers. */
interface Admission {
  readonly refused: ApiError | undefined
  readonly decision: RateDecision | undefined
}

const notLimited: Admission = { refused: undefined, decision: undefined }

/** The URL's path, without query or fragment (the access line never holds a query's secrets). */
const pathOf = (url: string) => {
  const end = url.search(/[?#]/)
  return end < 0 ? url : url.slice(0, end)
}

export const GlobalEnvelope = HttpRouter.middleware(EdgeMiddleware, { global: true })
