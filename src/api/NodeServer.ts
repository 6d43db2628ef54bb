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
import { Context, Duration, Effect, Layer, type LogLevel, Option, type Scope } from "effect"
import { Headers, HttpServerRequest, HttpTraceContext } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { type IncomingMessage, Server, type ServerResponse } from "node:http"
import * as net from "node:net"
import type { Duplex } from "node:stream"
import { Lifecycle } from "../platform/Lifecycle.ts"
import { isWellEncoded, stripVersionPrefix } from "./EdgeUrl.ts"
import { everyAnswer } from "./PageSecurity.ts"

/** A request id of Node's own answers and the node-level routes' (the application's are the edge's). */
const newRequestId = () => crypto.randomUUID().replaceAll("-", "")

const envelopeReply = (status: number, reason: string, code: string, message: string): string => {
  const requestId = newRequestId()
  const body = JSON.stringify({ error: { code, message, requestId } })
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${
    Buffer.byteLength(body)
  }\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
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
  /** The level of a node-level route's access line (the edge's `LOG_ACCESS_LEVEL`; default info). */
  readonly accessLogLevel?: LogLevel.LogLevel
  /** The edge refuses longer URLs (414); a node-level route leaves them to it. */
  readonly maxUrlLength?: number
}

/** What the server does when it starts closing (`NodeServerLive` starts the process's drain and logs). */
export interface DrainHooks {
  /** The drain starts; `open` connections are still open. */
  readonly started: (open: number) => void
  /** The listener closed (after the delay); `open` connections are retired (closed after their answer). */
  readonly stopped?: (open: number) => void
  /** Every connection closed (or was cut at the deadline: `cut` of them). */
  readonly finished: (cut: number) => void
  readonly deadlineMs: number
  /** How long the server still accepts connections and keeps them alive once the drain has started. */
  readonly delayMs: number
}

/** How long a connection with nothing in flight stays open once the listener has closed. */
export const IDLE_GRACE_MS = 250

/** Node's response on the socket: the request in flight, if any. */
const inFlight = (socket: net.Socket): ServerResponse | null =>
  (socket as net.Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? null

const hasBody = (request: IncomingMessage) =>
  request.headers["content-length"] !== undefined || request.headers["transfer-encoding"] !== undefined

const listeningOf: (server: net.Server) => boolean = (() => {
  const get = Object.getOwnPropertyDescriptor(net.Server.prototype, "listening")?.get
  return (server) => get === undefined ? server.address() !== null : (get.call(server) as boolean)
})()

export class NodeServer extends Server {
  private readonly routes = new Set<Registered>()
  private readonly sockets = new Set<net.Socket>()
  private draining = false
  /** The listener is closed (after the drain's delay). */
  private stopped = false
  private finished = false
  private hooks: DrainHooks | undefined
  private deadline: ReturnType<typeof setTimeout> | undefined

  /** The listener closed and every connection with it (`close` was emitted). */
  private closed = false

  constructor(private readonly options: NodeServerOptions) {
    super({ maxHeaderSize: options.maxHeaderBytes })
    this.once("close", () => (this.closed = true))
    // A kept-alive connection idle past `keepAliveTimeout`: Node destroys it from its timer, and a
    // loaded process runs timers before the I/O of its turn, so a request the client has just sent
    // on it (the client's own idle timer being later) was reset unread (ECONNRESET under load). With
    // a listener, Node leaves the socket to it: closed after this turn's I/O, only if still idle,
    // with a FIN; a request found meanwhile is answered and the timer armed again after it.
    this.on("timeout", (socket: net.Socket) => {
      setImmediate(() => {
        if (socket.destroyed || inFlight(socket) !== null) return
        socket.end()
        // A client that never closes its side is gone: the socket is dropped a while later.
        setTimeout(() => socket.destroy(), IDLE_GRACE_MS * 20).unref()
      }).unref()
    })
    // Still "listening" to whoever closes the server (Effect's HttpServer) until every connection
    // has closed: it waits for the close only while the server listens, and the drain closes
    // the listener itself, before the connections.
    Object.defineProperty(this, "listening", {
      configurable: true,
      get: () => listeningOf(this) || (this.stopped && !this.closed)
    })
    this.on("connection", (socket: net.Socket) => {
      this.sockets.add(socket)
      socket.once("close", () => {
        this.sockets.delete(socket)
        if (this.draining) this.checkFinished()
      })
      // Only a connection the kernel had queued before the listener closed: answered once, then closed.
      if (this.stopped) this.retire(socket)
    })
  }

  /** What closing the server starts (the process's drain); without it the drain still happens, unlogged. */
  onDrain(hooks: DrainHooks): void {
    this.hooks = hooks
  }

  /** Registers a route; returns its removal. */
  addRoute(registered: Registered): () => void {
    this.routes.add(registered)
    return () => void this.routes.delete(registered)
  }

  override emit(event: string, ...args: Array<any>): boolean {
    if (event === "request") {
      // The listener is closed: answer it, then close its connection (`Connection: close`).
      // During the drain's delay connections stay kept alive: a client told to reconnect then
      // would land in the listen queue, and the listener's close resets what waits there.
      if (this.stopped) (args[1] as ServerResponse).shouldKeepAlive = false
      if (this.routes.size > 0 && this.direct(args[0], args[1])) return true
      // Listening before the application is served (the socket is bound while the rest starts):
      // with nobody to answer, Node would leave the request hanging. It is told to come back.
      if (this.listenerCount("request") === 0) {
        const response = args[1] as ServerResponse
        const requestId = newRequestId()
        const body = JSON.stringify({
          error: { code: "service_unavailable", message: "The service is starting; try again shortly", requestId }
        })
        response.writeHead(503, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "retry-after": "1",
          "x-request-id": requestId,
          ...everyAnswer,
          connection: "close"
        })
        response.end(body)
        return true
      }
    }
    return super.emit(event, ...args)
  }

  override close(callback?: (error?: Error) => void): this {
    this.drain()
    // Called back when the listener has closed (after the delay) and every connection with it.
    if (callback !== undefined) {
      if (this.closed) process.nextTick(callback)
      else this.once("close", () => callback())
    }
    return this
  }

  /**
   * Starts the drain (once): the routes end their streams, the deadline starts. The listener
   * keeps accepting and answering, connections kept alive, for the delay (counted from here:
   * the signal, usually before the close); then it stops.
   */
  drain(): void {
    if (this.draining) return
    this.draining = true
    this.hooks?.started(this.sockets.size)
    for (const { route } of this.routes) route.close()
    this.deadline = setTimeout(() => {
      this.deadline = undefined
      const cut = this.sockets.size
      for (const socket of this.sockets) socket.destroy()
      this.report(cut)
    }, this.hooks?.deadlineMs ?? 20_000)
    this.deadline.unref()
    const delayMs = this.hooks?.delayMs ?? 0
    if (delayMs > 0) setTimeout(() => this.stop(), delayMs).unref()
    else this.stop()
  }

  /**
   * Stops accepting, then retires the open connections: each closes after its answer
   * (`Connection: close`), an idle one after a short grace. In that order, a client whose
   * connection closes reconnects to a closed port (refused), never into the listen queue that
   * the close resets. `net.Server`'s close, not `http.Server`'s: that one destroys idle
   * connections at once, resetting any whose client is just sending a request.
   */
  private stop(): void {
    if (this.stopped) return
    this.stopped = true
    net.Server.prototype.close.call(this)
    this.hooks?.stopped?.(this.sockets.size)
    // Streams a route took during the delay end too (the close waits for every connection).
    for (const { route } of this.routes) route.close()
    for (const socket of this.sockets) this.retire(socket)
    this.checkFinished()
  }

  private checkFinished(): void {
    if (this.stopped && this.sockets.size === 0) this.report(0)
  }

  private report(cut: number): void {
    if (this.finished) return
    this.finished = true
    if (this.deadline !== undefined) clearTimeout(this.deadline)
    this.hooks?.finished(cut)
  }

  /** Closes `socket` as soon as nothing is in flight on it (the drain). */
  private retire(socket: net.Socket): void {
    const response = inFlight(socket)
    if (response !== null) {
      if (!response.headersSent) response.shouldKeepAlive = false
      else response.once("finish", () => this.closeWhenIdle(socket))
      return
    }
    this.closeWhenIdle(socket)
  }

  private closeWhenIdle(socket: net.Socket): void {
    const timer = setTimeout(() => {
      // A request that arrived meanwhile is answered with `Connection: close`, which closes it.
      // Checked after this turn's I/O (timers run before it, `setImmediate` after): bytes already
      // received are parsed first, so a request waiting unread is not reset by closing under it
      // (a loaded event loop leaves them waiting past the grace).
      setImmediate(() => {
        if (!socket.destroyed && inFlight(socket) === null) socket.end()
      }).unref()
    }, IDLE_GRACE_MS)
    timer.unref()
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
    response.setHeader("x-request-id", newRequestId())
    try {
      if (!registered.route.serve(query, request, response)) {
        response.removeHeader("x-request-id")
        return false
      }
    } catch (defect) {
      // Not started: the application answers (and logs its own failure, if it fails too).
      if (!response.headersSent) {
        response.removeHeader("x-request-id")
        return false
      }
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
 * message and annotations as the edge's access line, a server span named by the route).
 */
const accessLine = (level: LogLevel.Severity, request: IncomingMessage, path: string, route: string) =>
  Effect.logWithLevel(level)("Sent HTTP response").pipe(
    Effect.annotateLogs({ "http.method": request.method ?? "GET", "http.url": path, "http.status": 200 }),
    Effect.withLogSpan("http.span"),
    Effect.withSpan(`${request.method ?? "GET"} ${route}`, {
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
  Layer.unwrap(Effect.gen(function*() {
    const server = makeNodeServer(options)
    const lifecycle = yield* Effect.serviceOption(Lifecycle)
    const deadline = Option.match(lifecycle, { onNone: () => Duration.seconds(20), onSome: (l) => l.deadline })
    const run = Effect.runForkWith(yield* Effect.context<never>())
    server.onDrain({
      deadlineMs: Duration.toMillis(deadline),
      delayMs: Option.match(lifecycle, { onNone: () => 0, onSome: (l) => Duration.toMillis(l.delay) }),
      started: (open) => {
        const line = `the HTTP server is draining; ${open} connection(s) open`
        run(
          Option.isSome(lifecycle)
            ? Effect.andThen(lifecycle.value.startDrain("the HTTP server closed"), Effect.logInfo(`shutdown: ${line}`))
            : Effect.logInfo(`shutdown: ${line}`)
        )
      },
      stopped: (open) =>
        run(Effect.logInfo(`shutdown: the HTTP listener closed; ${open} connection(s) close after their answer`)),
      finished: (cut) =>
        run(
          cut === 0
            ? Effect.logInfo("shutdown: every HTTP connection closed")
            : Effect.logWarning(`shutdown: ${cut} HTTP connection(s) still open at the deadline; closed`)
        )
    })
    // The process's drain (its signal) drains the server at once, before its layer closes it.
    if (Option.isSome(lifecycle)) {
      const remove = lifecycle.value.onDrainUnsafe(() => server.drain())
      yield* Effect.addFinalizer(() => Effect.sync(remove))
    }
    const accessLevel: LogLevel.Severity | undefined = options.accessLogLevel === "None"
      ? undefined
      : options.accessLogLevel === "All"
      ? "Trace"
      : options.accessLogLevel ?? "Info"
    const routes = NodeRoutes.of({
      add: (route) =>
        Effect.gen(function*() {
          const context = yield* Effect.context<never>()
          const log = Effect.runForkWith(context)
          const remove = server.addRoute({
            route,
            taken: options.disableLogger === true || accessLevel === undefined
              ? () => {}
              : (request, path) => void log(accessLine(accessLevel, request, path, route.path))
          })
          yield* Effect.addFinalizer(() => Effect.sync(remove))
        })
    })
    return Layer.merge(
      // Effect's own cut comes after ours (which closes the connections and logs it).
      NodeHttpServer.layer(() => server, {
        port: options.port,
        host: options.host,
        gracefulShutdownTimeout: Duration.sum(deadline, Duration.seconds(1))
      }),
      Layer.succeed(NodeRoutes, routes)
    )
  }))
