/**
 * The real HTTP stack on 127.0.0.1:<free port> with the launchpad group live (against the
 * fake upstream) as a contract of its own (`contractOf`), behind the service's envelope
 * middlewares. No database: the launchpad is public, and other groups are never called.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { contractOf } from "../../src/api/Contract.ts"
import { ErrorEnvelopeLive } from "../../src/api/Envelope.ts"
import { Unauthorized } from "../../src/api/Errors.ts"
import { GlobalEnvelope } from "../../src/api/GlobalEnvelope.ts"
import { documentRoutes, makeRouteTable, ServiceRoutes } from "../../src/api/Routes.ts"
import { Authorization } from "../../src/auth/Middleware.ts"
import { LaunchpadApi } from "../../src/launchpad/Api.ts"
import { LaunchpadHandlers } from "../../src/launchpad/Http.ts"
import { HttpApiBuilder } from "effect/http-api"
import type { Launchpad } from "../../src/launchpad/Launchpad.ts"
import { Fake, launchpadAgainstFake } from "./harness.ts"

export class LaunchpadServer extends Context.Service<LaunchpadServer, { readonly baseUrl: string }>()(
  "test/launchpad/LaunchpadServer"
) {}

const AuthorizationDeny = Layer.succeed(
  Authorization,
  Authorization.of({ bearer: () => Effect.fail(new Unauthorized({ message: "no sessions in launchpad tests" })) })
)

export const launchpadApp = Layer.mergeAll(
  HttpApiBuilder.layer(contractOf(LaunchpadApi)).pipe(
    Layer.provide(LaunchpadHandlers),
    Layer.provide([ErrorEnvelopeLive, AuthorizationDeny])
  ),
  GlobalEnvelope.pipe(Layer.provide(Layer.succeed(ServiceRoutes, makeRouteTable(contractOf(LaunchpadApi), documentRoutes))))
)

/** The app served on a loopback port; `Fake` (the upstream) is reachable too. */
export const launchpadServer = (overrides: Record<string, string> = {}): Layer.Layer<
  LaunchpadServer | Fake | Launchpad,
  unknown
> =>
  // The router's global-middleware slot types as `unknown` (GlobalEnvelope is declared `as never`);
  // everything it needs is provided below, as running the tests shows.
  (Layer.effect(
    LaunchpadServer,
    Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const address = server.address
      if (address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected a TCP address"))
      return { baseUrl: `http://127.0.0.1:${address.port}` }
    })
  ).pipe(
    Layer.provideMerge(HttpRouter.serve(launchpadApp, { disableLogger: true })),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(launchpadAgainstFake(overrides))
  ) as Layer.Layer<LaunchpadServer | Fake | Launchpad, unknown>)
