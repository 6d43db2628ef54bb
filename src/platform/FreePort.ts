/**
 * Loopback ports for what the service starts itself (embedded PostgreSQL, anvil, Alto) and
 * for the tests and benchmarks that start services. A port is free when the kernel hands it
 * out for `listen(0)`; it is closed again before whoever asked binds it, so two callers can
 * be handed the same port. This process never hands out the same port twice, and a caller
 * names the ports it must not get (the HTTP port the service is about to listen on, which a
 * test or an operator chose before the service started).
 */
import { Config, Effect, Option, type Scope } from "effect"
import type { Server as HttpServer } from "node:http"
import * as net from "node:net"

const handedOut = new Set<number>()

const kernelPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A loopback port free now, never one this process handed out before nor one of `avoid`. */
export const freePort = async (avoid: ReadonlyArray<number> = []): Promise<number> => {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await kernelPort()
    if (port !== 0 && !handedOut.has(port) && !avoid.includes(port)) {
      handedOut.add(port)
      return port
    }
  }
  throw new Error("no free loopback port in 100 attempts")
}

/**
 * The configured HTTP port (`PORT`), which the service binds only after its embedded
 * database and its local chain have started: none of them may be handed it.
 */
export const httpPortToAvoid: Effect.Effect<ReadonlyArray<number>> = Config.option(Config.Port("PORT")).pipe(
  Effect.map(Option.toArray),
  Effect.orElseSucceed(() => [])
)

/** Whether `port` on `host` is taken now (someone else listens there): a listen that fails with EADDRINUSE. */
export const portTaken = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.unref()
    server.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "EADDRINUSE"))
    server.listen(port, host, () => server.close(() => resolve(false)))
  })

export interface ListenOptions {
  /** What listens, first in its log lines ("metrics", "x402 facilitator"). */
  readonly name: string
  /** The variable that chooses the port, named when a port is taken. */
  readonly variable: string
  readonly host: string
  readonly port: number
  /**
   * The port is the default, not one the operator chose (the embedded defaults of a developer's
   * machine): when it is taken (a second instance on the host), a free one, said in the log.
   */
  readonly fallBack: boolean
}

/**
 * `server` listening on `host`:`port` for the scope (closed, its connections with it, when the
 * scope closes); the port it got. A taken port the operator chose ends the start with one line
 * naming its variable; a taken default with `fallBack` gives way to a free port, logged.
 */
export const listenScoped = (server: HttpServer, options: ListenOptions): Effect.Effect<number, never, Scope.Scope> => {
  const listen = (at: number) =>
    Effect.callback<number, NodeJS.ErrnoException>((resume) => {
      const failed = (e: NodeJS.ErrnoException) => resume(Effect.fail(e))
      server.once("error", failed)
      server.listen(at, options.host, () => {
        server.off("error", failed)
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : at))
      })
    })
  const taken = (e: NodeJS.ErrnoException) => e.code === "EADDRINUSE"
  const listenOrFallBack = listen(options.port).pipe(
    Effect.catchIf(
      (e) => options.fallBack && taken(e),
      () =>
        Effect.logWarning(`${options.name}: port ${options.port} is taken; serving on a free port (${options.variable} chooses the port)`).pipe(
          Effect.andThen(listen(0))
        )
    ),
    Effect.mapError((e) =>
      taken(e)
        ? new Error(
          `${options.name}: port ${options.port} on ${options.host} is taken (${options.variable}): ` +
            `set ${options.variable} to a free port, 0 for any, or off`
        )
        : e
    )
  )
  return Effect.acquireRelease(
    listenOrFallBack,
    () =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  ).pipe(Effect.orDie)
}

/** `http://host:port`, an IPv6 host in brackets. */
export const httpOrigin = (host: string, port: number) => `http://${host.includes(":") ? `[${host}]` : host}:${port}`
