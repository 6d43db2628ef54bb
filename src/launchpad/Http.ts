/**
 * The launchpad group's handlers: thin, every rule lives in `Launchpad`.
 * `LaunchpadHandlers` needs `Launchpad`; `LaunchpadLive` provides it given an `HttpClient`.
 *
 * A token page is validated and encoded by its Schema (`TokensPage`) once per cache fill
 * and then served as those bytes on every hit (docs/performance.md): re-encoding the same
 * 12 KB page on each request was the largest cost of the cached path.
 */
import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { LaunchpadApi, TokensPage } from "./Api.ts"
import { Launchpad, type TokensResult } from "./Launchpad.ts"

export { LaunchpadLive } from "./Launchpad.ts"

const encodeTokensPage = Schema.encodeUnknownEffect(Schema.toCodecJson(TokensPage))
const utf8 = new TextEncoder()

/** The page's JSON bytes, encoded by its Schema once per cache fill (keyed by the fill's object). */
const makePageBytes = () => {
  const encoded = new WeakMap<object, { readonly asOf: string; readonly bytes: Uint8Array }>()
  return ({ source, stale: _stale, ...page }: TokensResult) => {
    const hit = encoded.get(source)
    if (hit !== undefined && hit.asOf === page.asOf) return Effect.succeed(hit.bytes)
    return encodeTokensPage(page).pipe(
      Effect.map((json) => {
        const bytes = utf8.encode(JSON.stringify(json))
        encoded.set(source, { asOf: page.asOf, bytes })
        return bytes
      }),
      // A page the Schema refuses is a defect, exactly as the framework's own encoding treats it.
      Effect.orDie
    )
  }
}

export const LaunchpadHandlers = HttpApiBuilder.group(
  contractOf(LaunchpadApi),
  "launchpad",
  Effect.fn(function*(handlers) {
    const launchpad = yield* Launchpad
    const pageBytes = makePageBytes()
    return handlers
      .handle("listTokens", ({ query }) =>
        // A fresh cached page is answered straight from its bytes; anything else goes the whole way.
        launchpad.freshTokens(query).pipe(
          Effect.flatMap((fresh) => fresh === undefined ? launchpad.listTokens(query) : Effect.succeed(fresh)),
          Effect.flatMap(pageBytes),
          Effect.map((bytes) => HttpServerResponse.uint8Array(bytes, { contentType: "application/json" }))
        ))
      .handle("tokenHistory", ({ params, query }) =>
        launchpad.history(params.chain, params.address, query.range).pipe(
          Effect.map(({ stale: _stale, ...history }) => history)
        ))
  })
)
