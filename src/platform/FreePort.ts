/**
 * Loopback ports for what the service starts itself (embedded PostgreSQL, anvil, Alto) and
 * for the tests and benchmarks that start services. A port is free when the kernel hands it
 * out for `listen(0)`; it is closed again before whoever asked binds it, so two callers can
 * be handed the same port. This process never hands out the same port twice, and a caller
 * names the ports it must not get (the HTTP port the service is about to listen on, which a
 * test or an operator chose before the service started).
 */
import { Config, Effect, Option } from "effect"
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
