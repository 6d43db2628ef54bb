/**
 * The one way this service GETs JSON from an upstream (marketplace, launchpad, price
 * source): a per-attempt timeout, retries on transport faults only (connection refused or
 * reset: never after a status, a timeout or a body), and a body-size cap enforced while
 * the body streams in (reading stops at the cap, so a 100 MB answer costs at most the cap
 * in memory). Faults become the contract's errors: no answer in time → `UpstreamTimeout`
 * (504); unreachable, a non-2xx status, a body over the cap, not JSON, or (with `decode`)
 * not the expected shape → `UpstreamUnavailable` (502). Nothing is ever made up.
 */
import { Config, Duration, Effect, Schedule, Schema, Stream } from "effect"
import { HttpClient, HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { UpstreamTimeout, UpstreamUnavailable } from "./Errors.ts"

export type UpstreamError = UpstreamUnavailable | UpstreamTimeout

/** Largest upstream body read (bytes): `UPSTREAM_MAX_BODY_BYTES`, default 8 MiB. */
export const UpstreamMaxBodyBytes = Config.Int("UPSTREAM_MAX_BODY_BYTES").pipe(Config.withDefault(8 * 1024 * 1024))

export interface UpstreamOptions {
  /** How the upstream is named in error messages, e.g. "The marketplace". */
  readonly name: string
  readonly timeout: Duration.Duration
  /** Extra attempts after a transport fault. */
  readonly retries: number
  readonly maxBodyBytes: number
  /** First retry delay (doubling). */
  readonly backoff?: Duration.Duration | undefined
}

export type UpstreamAnswer =
  | { readonly _tag: "Body"; readonly status: number; readonly json: Schema.Json }
  /** A status the caller listed in `answers` (e.g. 404 "no such thing"): its body is not read. */
  | { readonly _tag: "Status"; readonly status: number }

const unavailable = (message: string, details?: Record<string, string | number>) =>
  new UpstreamUnavailable(details === undefined ? { message } : { message, details })

const isTransportFault = (e: unknown): boolean =>
  HttpClientError.isHttpClientError(e) && e.reason._tag === "TransportError"

class BodyTooLarge {
  readonly _tag = "BodyTooLarge"
}

/** The body as text, refusing (and no longer reading) past `maxBytes`. */
export const readCapped = (response: HttpClientResponse.HttpClientResponse, maxBytes: number) => {
  const declared = Number(response.headers["content-length"])
  if (Number.isFinite(declared) && declared > maxBytes) return Effect.fail(new BodyTooLarge())
  return response.stream.pipe(
    Stream.runFoldEffect(
      () => ({ chunks: [] as Array<Uint8Array>, size: 0 }),
      (acc, chunk: Uint8Array) => {
        acc.size += chunk.byteLength
        if (acc.size > maxBytes) return Effect.fail(new BodyTooLarge())
        acc.chunks.push(chunk)
        return Effect.succeed(acc)
      }
    ),
    Effect.map(({ chunks }) => Buffer.concat(chunks).toString("utf8"))
  )
}

/**
 * GET `request` and parse its JSON body. `answers`: non-2xx statuses that are answers, not
 * faults (their bodies are not read).
 */
export const getJson = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  options: UpstreamOptions & { readonly answers?: ReadonlyArray<number> | undefined }
): Effect.Effect<UpstreamAnswer, UpstreamError> => {
  const attempt = client.execute(HttpClientRequest.acceptJson(request)).pipe(
    Effect.flatMap((res): Effect.Effect<UpstreamAnswer, UpstreamUnavailable | HttpClientError.HttpClientError> => {
      if (options.answers?.includes(res.status)) return Effect.succeed({ _tag: "Status", status: res.status })
      if (res.status < 200 || res.status >= 300) {
        return Effect.fail(unavailable(`${options.name} answered HTTP ${res.status}.`, { upstreamStatus: res.status }))
      }
      return readCapped(res, options.maxBodyBytes).pipe(
        Effect.catchIf(
          (e): e is BodyTooLarge => e instanceof BodyTooLarge,
          () =>
            Effect.fail(
              unavailable(`${options.name} answered more than ${options.maxBodyBytes} bytes.`, {
                maxBytes: options.maxBodyBytes
              })
            )
        ),
        Effect.flatMap((text) =>
          Effect.try({
            try: (): UpstreamAnswer => ({ _tag: "Body", status: res.status, json: JSON.parse(text) as Schema.Json }),
            catch: () => unavailable(`${options.name} answered with malformed JSON.`)
          })
        )
      )
    }),
    Effect.timeoutOrElse({
      duration: options.timeout,
      orElse: () =>
        Effect.fail(new UpstreamTimeout({ message: `${options.name} did not answer within ${Duration.format(options.timeout)}.` }))
    })
  )
  return attempt.pipe(
    Effect.retry({
      while: isTransportFault,
      times: Math.max(0, options.retries),
      schedule: Schedule.exponential(options.backoff ?? Duration.millis(50))
    }),
    Effect.catchIf(HttpClientError.isHttpClientError, (e) =>
      Effect.fail(unavailable(`${options.name} could not be reached.`, { reason: e.reason._tag })))
  )
}

/** `getJson` of a 2xx body decoded with `schema`; any other shape is `UpstreamUnavailable`. */
export const getDecoded = <S extends Schema.Constraint & { readonly DecodingServices: never }>(
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  schema: S,
  options: UpstreamOptions
): Effect.Effect<S["Type"], UpstreamError> =>
  getJson(client, request, options).pipe(
    Effect.flatMap((answer) =>
      answer._tag === "Body"
        ? Schema.decodeUnknownEffect(schema)(answer.json).pipe(
          Effect.mapError(() => unavailable(`${options.name} answered in an unexpected shape.`))
        )
        : Effect.fail(unavailable(`${options.name} answered HTTP ${answer.status}.`))
    )
  )
