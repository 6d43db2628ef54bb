/**
 * Fuzz cases derived from the `HttpApi` itself: for every endpoint, valid path params,
 * queries and bodies are generated from its own Schemas (Effect's `Arbitrary`), then
 * mutated into the invalid and the hostile (NUL bytes, unpaired surrogates, bad
 * percent-encoding, over-long values, wrong types, broken JSON, wrong content types,
 * wrong methods, missing or bad tokens).
 */
import { Arbitrary, Effect, Schema } from "effect"
import { HttpApi, type HttpApiEndpoint } from "effect/http-api"
import { Api } from "../../src/Api.ts"

export interface FuzzCase {
  readonly endpoint: string
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body?: string | undefined
}

/** A small seeded PRNG (mulberry32): the same seed, the same cases. */
export const prng = (seed: number) => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[int(xs.length)]!
  return { next, int, pick, chance: (p: number) => next() < p }
}
export type Prng = ReturnType<typeof prng>

/** Raw (already percent-encoded) path segments and query values a hostile client sends. */
const nastyRaw = [
  "",
  "%00",
  "a%00b",
  "%E0%A4%A",
  "%ZZ",
  "%",
  "%C3%28",
  "%ED%A0%80",
  "%F0%9F%92%B0",
  "a".repeat(101),
  "b".repeat(2000),
  "%2F",
  "..",
  "anchor",
  "-1",
  "0",
  "1e309",
  "NaN",
  "0x" + "f".repeat(40),
  "0x" + "F".repeat(64),
  "%27%20OR%201%3D1--",
  "%3Cscript%3E",
  "true",
  "null"
]

/** Decoded JSON values that break naive handlers. */
const nastyJson: ReadonlyArray<unknown> = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "",
  "x".repeat(5000),
  -1,
  0,
  1e308,
  -1e308,
  1.5,
  2 ** 53 + 1,
  true,
  null,
  [],
  {},
  [null],
  { "\u0000": 1 },
  "0x" + "0".repeat(40),
  "2026-13-45T99:99:99Z",
  "USDC\u0000"
]

const contentTypes = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/xml",
  "application/json; charset=utf-16",
  "application/octet-stream",
  ""
]

interface EndpointModel {
  readonly endpoint: HttpApiEndpoint.Top
  readonly params: ReadonlyArray<Record<string, string>>
  readonly query: ReadonlyArray<Record<string, string | ReadonlyArray<string>>>
  readonly bodies: ReadonlyArray<unknown>
  readonly hasBody: boolean
}

/** Generates `count` valid wire values of `schema` (encoded), or [] when it cannot be derived. */
const samples = (schema: Schema.Top, count: number, seed: number, json: boolean) =>
  Effect.gen(function*() {
    const codec = json ? Schema.toCodecJson(schema as Schema.Codec<unknown, unknown>) : schema
    const encode = Schema.encodeUnknownSync(codec as Schema.Codec<unknown, unknown>)
    const arbitrary = yield* Effect.try(() => Arbitrary.schema(schema as Schema.Codec<unknown, unknown>))
    const values = yield* Arbitrary.sampleEffect(arbitrary, { count, seed, size: 8 })
    return values.flatMap((v) => {
      try {
        return [encode(v)]
      } catch {
        return []
      }
    })
  }).pipe(Effect.orElseSucceed(() => [] as Array<unknown>))

export const endpointModels = (perEndpoint: number, seed: number) =>
  Effect.gen(function*() {
    const endpoints: Array<HttpApiEndpoint.Top> = []
    HttpApi.reflect(Api, {
      onGroup: () => {},
      onEndpoint: ({ endpoint }) => {
        endpoints.push(endpoint)
      }
    })
    const models: Array<EndpointModel> = []
    for (const [i, endpoint] of endpoints.entries()) {
      const payload = endpoint.payload.get("application/json")
      const params = endpoint.params === undefined
        ? [{}]
        : (yield* samples(endpoint.params, perEndpoint, seed + i, false)) as Array<Record<string, string>>
      const query = endpoint.query === undefined
        ? [{}]
        : (yield* samples(endpoint.query, perEndpoint, seed + 1000 + i, false)) as Array<Record<string, string>>
      const bodies = payload === undefined ? [] : yield* samples(payload.schemas[0], perEndpoint, seed + 2000 + i, true)
      models.push({ endpoint, params, query, bodies, hasBody: payload !== undefined })
    }
    return models
  })

const paramNames = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!)

const fillPath = (path: string, params: Record<string, string>, rnd: Prng, hostile: boolean) =>
  path.replace(/:(\w+)/g, (_, name: string) => {
    if (hostile && rnd.chance(0.5)) return rnd.pick(nastyRaw)
    const value = params[name]
    if (value === undefined) return rnd.pick(nastyRaw)
    try {
      return encodeURIComponent(String(value))
    } catch {
      // A lone surrogate cannot be UTF-8 encoded: send raw bytes the server must refuse instead.
      return rnd.pick(nastyRaw)
    }
  })

/** A value URL-encoded; a lone surrogate (no UTF-8 form) becomes raw bytes the server must refuse. */
const encodedOrRaw = (value: string, rnd: Prng) => {
  try {
    return encodeURIComponent(value)
  } catch {
    return rnd.pick(nastyRaw)
  }
}

const queryString = (query: Record<string, string | ReadonlyArray<string>>, rnd: Prng, hostile: boolean) => {
  const parts: Array<string> = []
  for (const [key, value] of Object.entries(query)) {
    if (hostile && rnd.chance(0.2)) continue // a required key missing
    const values = Array.isArray(value) ? value : [value as string]
    for (const v of values) {
      parts.push(`${encodeURIComponent(key)}=${hostile && rnd.chance(0.4) ? rnd.pick(nastyRaw) : encodedOrRaw(String(v), rnd)}`)
    }
  }
  if (hostile && rnd.chance(0.3)) parts.push(`${rnd.pick(["limit", "status", "cursor", "x", "%00"])}=${rnd.pick(nastyRaw)}`)
  return parts.length === 0 ? "" : `?${parts.join("&")}`
}

/** A JSON body with one field (anywhere in the tree) replaced, dropped, or the whole thing broken. */
const mutateBody = (body: unknown, rnd: Prng): string => {
  const roll = rnd.int(10)
  if (roll === 0) return rnd.pick(["", "{", "[1,", "null", "\"text\"", "{\"a\":}", "\u0000", "[]", "{}", "1"])
  if (roll === 1) return "[".repeat(20000) + "]".repeat(20000)
  if (roll === 2) return JSON.stringify(rnd.pick(nastyJson))
  const copy = JSON.parse(JSON.stringify(body ?? {})) as unknown
  const holders: Array<[Record<string, unknown> | Array<unknown>, string | number]> = []
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach((x, i) => (holders.push([v, i]), walk(x)))
    else if (typeof v === "object" && v !== null) {
      for (const [k, x] of Object.entries(v)) holders.push([v as Record<string, unknown>, k]), walk(x)
    }
  }
  walk(copy)
  if (holders.length === 0) return JSON.stringify(rnd.pick(nastyJson))
  const [holder, key] = rnd.pick(holders)
  if (roll === 3 && !Array.isArray(holder)) delete holder[key as string]
  else (holder as Record<string | number, unknown>)[key] = rnd.pick(nastyJson)
  return JSON.stringify(copy)
}

/** The cases for one endpoint: valid ones, and hostile ones of every kind. */
export const casesFor = (model: EndpointModel, count: number, rnd: Prng, token: string): Array<FuzzCase> => {
  const { endpoint } = model
  const cases: Array<FuzzCase> = []
  for (let n = 0; n < count; n++) {
    const hostile = n % 4 !== 0
    const params = model.params.length > 0 ? rnd.pick(model.params) : {}
    const query = model.query.length > 0 ? rnd.pick(model.query) : {}
    let method: string = endpoint.method
    const headers: Record<string, string> = {}
    if (!hostile || rnd.chance(0.9)) headers.authorization = `Bearer ${token}`
    else headers.authorization = rnd.pick(["Bearer ", "Bearer x", "Basic abc", `Bearer ${token}x`, "Bearer %00"])
    let body: string | undefined
    if (model.hasBody) {
      const valid = model.bodies.length > 0 ? rnd.pick(model.bodies) : {}
      body = hostile && rnd.chance(0.7) ? mutateBody(valid, rnd) : JSON.stringify(valid)
      headers["content-type"] = hostile && rnd.chance(0.15) ? rnd.pick(contentTypes) : "application/json"
    } else if (hostile && rnd.chance(0.1)) {
      body = JSON.stringify({ unexpected: rnd.pick(nastyJson) })
      headers["content-type"] = rnd.pick(["application/json", "text/plain"])
    }
    if (hostile && rnd.chance(0.05)) method = rnd.pick(["PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "GET", "POST"])
    if (method === "GET" || method === "HEAD") body = undefined
    const prefix = rnd.chance(0.2) ? "/v1" : ""
    const path = fillPath(endpoint.path, params, rnd, hostile && paramNames(endpoint.path).length > 0)
    const url = `${prefix}${path}${queryString(query as Record<string, string>, rnd, hostile)}`
    cases.push({ endpoint: `${endpoint.method} ${endpoint.path}`, method, url, headers, body })
  }
  return cases
}
