/**
 * The client address of the request being served: the TCP peer, as the edge's per-IP rate
 * limits key it. Behind a reverse proxy every client shares the proxy's address (forwarded
 * headers are forgeable and not trusted: docs/decisions.md, "The HTTP edge"), so limits keyed
 * by it must be raised (or turned off) there. `undefined` outside a request (a background job).
 */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"

/** An IPv4 peer seen through an IPv6 socket (`::ffff:1.2.3.4`) is its IPv4 address. */
export const normalizeClientAddress = (address: string): string => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, "$1")

export const currentClientAddress: Effect.Effect<string | undefined> = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) =>
    Option.isNone(request) ? undefined : Option.match(request.value.remoteAddress, {
      onNone: () => undefined,
      onSome: normalizeClientAddress
    })
)
