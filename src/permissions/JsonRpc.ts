/**
 * JSON-RPC 2.0 for the wallet endpoint, as pure functions: one call read from the body (a batch,
 * a notification without `id`, a wrong `jsonrpc`, an unknown method are refused naming the field),
 * the error codes (EIP-1474 / EIP-1193, as MetaMask's wallet methods use them) and the service's
 * typed errors as JSON-RPC errors. docs/permissions.md, "JSON-RPC".
 */
import type { Schema } from "effect"
import type { JsonRpcError, JsonRpcResponse } from "./Domain.ts"
import { badTextAt, storable } from "./Wire.ts"

export const METHODS = [
  "wallet_requestExecutionPermissions",
  "wallet_getSupportedExecutionPermissions",
  "wallet_getGrantedExecutionPermissions",
  "wallet_revokeExecutionPermission"
] as const
export type Method = (typeof METHODS)[number]

/** EIP-1474 (-32xxx) and EIP-1193 (4xxx) codes. */
export const RpcCode = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  resourceNotFound: -32001,
  resourceUnavailable: -32002,
  transactionRejected: -32003,
  limitExceeded: -32005,
  userRejected: 4001
} as const

export type Id = string | number | null

export type Call =
  | { readonly _tag: "Call"; readonly id: string | number; readonly method: Method; readonly params: Schema.Json | undefined }
  | { readonly _tag: "Invalid"; readonly id: Id; readonly error: JsonRpcError }

const isRecord = (x: unknown): x is { readonly [k: string]: Schema.Json } => typeof x === "object" && x !== null && !Array.isArray(x)

export const rpcError = (code: number, message: string, data?: Schema.Json): JsonRpcError =>
  data === undefined ? { code, message } : { code, message, data }

const invalid = (id: Id, field: string, message: string): Call => ({
  _tag: "Invalid",
  id,
  error: rpcError(RpcCode.invalidRequest, message, { field })
})

/** One call of the body, or why it is not one. Every call here answers: a notification (no `id`) is refused. */
export const readCall = (body: Schema.Json): Call => {
  if (Array.isArray(body)) {
    return invalid(null, "body", "A batch is not accepted here: send one call per request (a permission request waits for the owner's approval)")
  }
  if (!isRecord(body)) return invalid(null, "body", "The body must be one JSON-RPC 2.0 request object")
  const rawId = body["id"]
  const id: Id = typeof rawId === "string" || typeof rawId === "number" ? rawId : null
  if (!("id" in body)) return invalid(null, "id", "id is required: every call here answers (notifications are not accepted)")
  if (typeof rawId === "string" ? rawId.length > 128 || !storable.test(rawId) : typeof rawId !== "number" || !Number.isFinite(rawId)) {
    return invalid(null, "id", "id must be a number or a string of at most 128 characters without NUL")
  }
  if (body["jsonrpc"] !== "2.0") return invalid(id, "jsonrpc", `jsonrpc must be "2.0"`)
  const method = body["method"]
  if (typeof method !== "string" || !storable.test(method)) return invalid(id, "method", "method must be a string")
  if (!(METHODS as ReadonlyArray<string>).includes(method)) {
    return {
      _tag: "Invalid",
      id,
      error: rpcError(RpcCode.methodNotFound, `The method ${JSON.stringify(method.slice(0, 80))} does not exist here; methods: ${METHODS.join(", ")}`, {
        field: "method",
        methods: [...METHODS]
      })
    }
  }
  const params = body["params"]
  if (params !== undefined && params !== null && typeof params !== "object") {
    return invalid(id, "params", "params must be an array or an object")
  }
  const bad = badTextAt(params, "params")
  if (bad !== undefined) {
    return { _tag: "Invalid", id, error: rpcError(RpcCode.invalidParams, `${bad} must not contain NUL characters or unpaired surrogates`, { field: bad }) }
  }
  return { _tag: "Call", id: rawId as string | number, method: method as Method, params: params ?? undefined }
}

export const answer = (id: Id, result: Schema.Json): JsonRpcResponse => ({ jsonrpc: "2.0", id, result })
export const failure = (id: Id, error: JsonRpcError): JsonRpcResponse => ({ jsonrpc: "2.0", id, error })

/**
 * A typed error of the service (the envelope's code and details) as a JSON-RPC error. The four
 * methods are all implemented and none of their paths raises `NotImplemented`: it has no code of
 * its own here (any tag not listed is -32603).
 */
export const fromServiceError = (e: {
  readonly _tag: string
  readonly message: string
  readonly details?: { readonly [k: string]: Schema.Json } | undefined
  readonly declineReason?: string | undefined
}): JsonRpcError => {
  const data = (extra: { readonly [k: string]: Schema.Json }) => ({ ...(e.details ?? {}), ...extra })
  switch (e._tag) {
    case "BadRequest":
      return rpcError(RpcCode.invalidParams, e.message, data({}))
    case "NotFound":
      return rpcError(RpcCode.resourceNotFound, e.message, data({}))
    case "OutOfScope":
      return rpcError(RpcCode.transactionRejected, e.message, data(e.declineReason === undefined ? {} : { declineReason: e.declineReason }))
    case "Conflict":
      return rpcError(RpcCode.transactionRejected, e.message, data({}))
    case "TooManyRequests":
      return rpcError(RpcCode.limitExceeded, e.message, data({}))
    case "ServiceUnavailable":
    case "UpstreamUnavailable":
    case "UpstreamTimeout":
      return rpcError(RpcCode.resourceUnavailable, e.message, data({}))
    default:
      return rpcError(RpcCode.internal, e.message, data({}))
  }
}

/** A value as JSON carries it (`undefined` fields dropped), for a `result`. */
export const asJson = (value: unknown): Schema.Json => JSON.parse(JSON.stringify(value)) as Schema.Json

/**
 * The `id` of a call's body as its text wrote it, when it is a number (JSON.parse rounds an
 * integer above 2^53: `9007199254740993` would be answered `9007199254740992`). The body's
 * top-level `id` member (the last one, as JSON.parse keeps); `undefined` when it is not a number.
 */
export const rawNumericId = (text: string): string | undefined => {
  let depth = 0
  let found: string | undefined
  let i = 0
  const n = text.length
  const skipSpace = () => {
    while (i < n && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++
  }
  const readString = () => {
    const start = i++
    while (i < n && text[i] !== "\"") i += text[i] === "\\" ? 2 : 1
    i++
    return text.slice(start, i)
  }
  while (i < n) {
    const c = text[i]!
    if (c === "\"") {
      const key = readString()
      if (depth !== 1) continue
      skipSpace()
      if (text[i] !== ":") continue
      i++
      skipSpace()
      if (key !== "\"id\"") continue
      const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400))
      found = number === null ? undefined : number[0]
      if (number !== null) i += number[0].length
    } else {
      if (c === "{" || c === "[") depth++
      else if (c === "}" || c === "]") depth--
      i++
    }
  }
  return found
}

const ID_SLOT = "\"\\u0000id\""

/**
 * The answer as JSON text, its `id` written exactly as the call wrote it (`rawId`, from
 * `rawNumericId`) when the call's id was that number.
 */
export const encodeAnswer = (response: JsonRpcResponse, rawId: string | undefined): string => {
  if (rawId === undefined || typeof response.id !== "number" || Number(rawId) !== response.id) return JSON.stringify(response)
  return JSON.stringify({ ...response, id: "\u0000id" }).replace(ID_SLOT, rawId)
}
