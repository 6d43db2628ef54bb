/**
 * The Node HTTP server the service listens with.
 *
 * Node refuses some requests before the application sees them (headers over
 * `maxHeaderSize`, a request line it cannot parse); its own answers have no body, so
 * `clientError` writes the contract's envelope instead.
 *
 * Node-level routes: a route registered through `NodeRoutes` may take a request before
 * the Effect application does, and keep its response without any fiber (the stats stream:
 * an open SSE response is then only node's socket and response plus the hub's
 * subscriber). A route takes only requests it can answer with success; anything it
 * declines (a bad query, no capacity, a body, a URL the edge refuses) goes on to the
 * application unchanged, which answers as it always does (envelopes, `requestId`,
 * access log). When the server starts closing, each route ends the responses it holds,
 * so the graceful close does not wait for them.
 */
import { Context, Effect, Layer, Option, type Scope } from "effect"
import { Headers, HttpServerRequest, HttpTraceContext } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { type IncomingMessage, Server, type ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { isWellEncoded, stripVersionPrefix } from "./EdgeUrl.ts"

const envelopeReply = (status: number, reason: string, code: string, message: string): string => {
  const body = JSON.stringify({ error: { code, message } })
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${
    Buffer.byteLength(body)
  }\r\nConnection: close\r\n\r\n${body}`
}

const replyFor = (error: NodeJS.ErrnoException, maxHeaderBytes: number): string | undefined => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return envelopeReply(
        431,
        "Request Header Fields Too Large",
        "headers_too_large",
        `The request line and headers are larger than ${maxHeaderBytes} bytes`
      )
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return envelopeReply(408, "Request Timeout", "request_timeout", "The request was not received in time")
    case "ECONNRESET":
      return undefined
    default:
      return envelopeReply(400, "Bad Request", "bad_request", "The request could not be parsed as HTTP")
  }
}

/** A request the node server may answer itself, before the application. */
export interface NodeRoute {
  readonly method: "GET"
  /** Exact path, without the `/v1` prefix and without the query. */
  readonly path: string
  /**
   * Takes the request and returns true, or returns false without touching `response`: the
   * application then answers it (so every refusal keeps the application's envelope).
   */
  readonly serve: (
    query: Readonly<Record<string, string | ReadonlyArray<string>>>,
    request: IncomingMessage,
    response: ServerResponse
  ) => boolean
  /** The server starts closing: end the responses this route still holds. */
  readonly close: () => void
}

interface Registered {
  readonly route: NodeRoute
  /** Logs the access line (and the request span) for a request the route took; `path` as requested. */
  readonly taken: (request: IncomingMessage, path: string) => void
}

export interface NodeServerOptions {
  readonly maxHeaderBytes: number
  /** The edge refuses longer URLs (414); a node-level route leaves them to it. */
  readonly maxUrlLength?: number
}

const hasBody = (request: IncomingMessage) =>
  request.headers["content-length"] !== undefined || request.headers["transfer-encoding"] !== undefined

export class NodeServer extends Server {
  private readonly routes = new Set<Registered>()

  constructor(private readonly options: NodeServerOptions) {
    super({ maxHeaderSize: options.maxHeaderBytes })
  }

  /** Registers a route; returns its removal. */
  addRoute(registered: Registered): () => void {
    this.routes.add(registered)
    return () => void this.routes.delete(registered)
  }

  override emit(event: string, ...args: Array<any>): boolean {
    if (event === "request" && this.routes.size > 0 && this.direct(args[0], args[1])) return true
    // Listening before the application is served (the socket is bound while the rest starts):
    // with nobody to answer, Node would leave the request hanging. It is told to come back.
    if (event === "request" && this.listenerCount("request") === 0) {
      const response = args[1] as ServerResponse
      const body = JSON.stringify({ error: { code: "service_unavailable", message: "The service is starting; try again shortly" } })
      response.writeHead(503, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "retry-after": "1",
        connection: "close"
      })
      response.end(body)
      return true
    }
    return super.emit(event, ...args)
  }

  override close(callback?: (error?: Error) => void): this {
    for (const { route } of this.routes) route.close()
    return super.close(callback)
  }

  /** Whether a node-level route took the request. */
  private direct(request: IncomingMessage, response: ServerResponse): boolean {
    const raw = request.url ?? ""
    const url = stripVersionPrefix(raw)
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    let registered: Registered | undefined
    for (const r of this.routes) if (r.route.method === request.method && r.route.path === path) registered = r
    if (registered === undefined) return false
    // What the edge refuses, and a body to read, are the application's to answer.
    if (raw.length > (this.options.maxUrlLength ?? Infinity) || !isWellEncoded(raw) || hasBody(request)) return false
    let query: Readonly<Record<string, string | ReadonlyArray<string>>>
    try {
      query = HttpServerRequest.searchParamsFromURL(new URL(url, "http://localhost"))
    } catch {
      return false
    }
    try {
      if (!registered.route.serve(query, request, response)) return false
    } catch (defect) {
      // Not started: the application answers (and logs its own failure, if it fails too).
      if (!response.headersSent) return false
      response.destroy(defect as Error)
      return true
    }
    const rawQuery = raw.indexOf("?")
    registered.taken(request, rawQuery < 0 ? raw : raw.slice(0, rawQuery))
    return true
  }
}

export const makeNodeServer = (options: NodeServerOptions): NodeServer => {
  const server = new NodeServer(options)
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's own handler: never write into a response already under way on this socket.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage
    const reply = socket.writable && inFlight?.headersSent !== true ? replyFor(error, options.maxHeaderBytes) : undefined
    if (reply === undefined) {
      socket.destroy()
      return
    }
    socket.end(reply)
  })
  // CONNECT (a proxy tunnel) is no request this service answers; Node would drop the socket.
  server.on("connect", (_request, socket: Duplex) => {
    socket.end(envelopeReply(405, "Method Not Allowed", "method_not_allowed", "CONNECT is not supported"))
  })
  return server
}

/**
 * Registers node-level routes on the server the service listens with. Optional: an app
 * composed without it (tests on a plain server) serves every request through HttpApi.
 */
export class NodeRoutes extends Context.Service<NodeRoutes, {
  /** For the life of the scope; the access line and span use the caller's logger and tracer. */
  add(route: NodeRoute): Effect.Effect<void, never, Scope.Scope>
}>()("das/api/NodeRoutes") {}

/**
 * What the application's access log and tracer record for a request it answered (the same
 * message and annotations as `HttpMiddleware.logger`, a server span named by the method).
 */
const accessLine = (request: IncomingMessage, path: string) =>
  Effect.log("Sent HTTP response").pipe(
    Effect.annotateLogs({ "http.method": request.method ?? "GET", "http.url": path, "http.status": 200 }),
    Effect.withLogSpan("http.span"),
    Effect.withSpan(request.method ?? "GET", {
      kind: "server",
      parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(Headers.fromInput(request.headers as Headers.Input))),
      attributes: {
        "http.request.method": request.method,
        "url.path": path,
        "http.response.status_code": 200,
        ...(request.socket.remoteAddress === undefined ? {} : { "client.address": request.socket.remoteAddress })
      }
    })
  )

/** `HttpServer` on a `NodeServer`, with its `NodeRoutes`. `disableLogger`: no access line (as `HttpRouter.serve`'s). */
export const NodeServerLive = (
  options: NodeServerOptions & { readonly port: number; readonly host: string; readonly disableLogger?: boolean }
) =>
  Layer.unwrap(Effect.sync(() => {
    const server = makeNodeServer(options)
    const routes = NodeRoutes.of({
      add: (route) =>
        Effect.gen(function*() {
          const context = yield* Effect.context<never>()
          const log = Effect.runForkWith(context)
          const remove = server.addRoute({
            route,
            taken: options.disableLogger === true ? () => {} : (request, path) => void log(accessLine(request, path))
          })
          yield* Effect.addFinalizer(() => Effect.sync(remove))
        })
    })
    return Layer.merge(
      NodeHttpServer.layer(() => server, { port: options.port, host: options.host }),
      Layer.succeed(NodeRoutes, routes)
    )
  }))
