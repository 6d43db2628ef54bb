/**
 * The project's typed client, built from the same HttpApi the server serves, so
 * every request and response is checked against the contract's Schemas on both
 * sides. `token` is the session bearer from `POST /auth/session` (none for the
 * public endpoints and sign-in).
 */
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"
import { Api } from "../Api.ts"
import { Authorization, InlineAuthorization } from "../auth/Middleware.ts"

export type ApiClient = HttpApiClient.ForApi<typeof Api>

export const authorizationClient = (token: string | undefined) =>
  Layer.merge(
    HttpApiMiddleware.layerClient(Authorization, ({ next, request }) =>
      next(token === undefined ? request : HttpClientRequest.bearerToken(request, token))),
    // The same bearer, for the endpoints that check the session in their own statement (POST /userops).
    HttpApiMiddleware.layerClient(InlineAuthorization, ({ next, request }) =>
      next(token === undefined ? request : HttpClientRequest.bearerToken(request, token)))
  )

/** `headers`: sent with every call (the `/mcp` tools' loopback calls name their caller, src/platform/ClientAddress.ts). */
export const makeClient = (options: { readonly baseUrl: string; readonly token?: string | undefined; readonly headers?: Record<string, string> | undefined }) =>
  HttpApiClient.make(Api, {
    baseUrl: options.baseUrl,
    ...(options.headers === undefined ? {} : { transformClient: HttpClient.mapRequest(HttpClientRequest.setHeaders(options.headers)) })
  }).pipe(
    Effect.provide(Layer.merge(authorizationClient(options.token), FetchHttpClient.layer))
  )
