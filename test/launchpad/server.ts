/**
 * The real HTTP stack on 127.0.0.1:<free port> with the launchpad group live (against the
 * fake upstream) and every other group answering 501, behind the lead's envelope
 * middlewares. No database: the launchpad is public, and other groups are never called.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { Api } from "../../src/Api.ts"
import { ErrorEnvelopeLive } from "../../src/api/Envelope.ts"
import { Unauthorized } from "../../src/api/Errors.ts"
import { GlobalEnvelope } from "../../src/api/GlobalEnvelope.ts"
import { notImplementedGroup } from "../../src/api/NotImplemented.ts"
import { Authorization } from "../../src/auth/Middleware.ts"
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

const otherGroups = Object.keys(Api.groups)
  .filter((g) => g !== "launchpad")
  // The helper is generic over the group's endpoints; its name list is narrower than needed here.
  .map((g) => notImplementedGroup(g as "delegations", "not under test"))

export const launchpadApp = Layer.mergeAll(
  HttpApiBuilder.layer(Api).pipe(
    Layer.provide(Layer.mergeAll(LaunchpadHandlers, ...otherGroups)),
    Layer.provide([ErrorEnvelopeLive, AuthorizationDeny])
  ),
  GlobalEnvelope
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
