/**
 * viem's `fetchFn` for a chain's JSON-RPC endpoint over an undici connection pool (keep-alive,
 * one per endpoint), not the global `fetch`. `fetch` builds WHATWG requests, streams and
 * headers for every call: ≈ 0.7 ms of CPU per `eth_getCode` through viem on this machine,
 * against ≈ 0.2 ms here, and ≈ 0.4 ms more wait (docs/performance.md, "Issue 30: third
 * pass"). The Bundler client moved off `fetch` for the same reason.
 *
 * Only what viem's http transport reads of a response is answered: `ok`, `status`,
 * `statusText`, `headers.get`, `text()`/`json()`, and no `body` stream (viem then reads the
 * text and checks its size itself). The body is read here with viem's own cap (10 MiB): a
 * larger answer is abandoned as it arrives, not held whole first.
 */
import { Pool } from "undici"
import { ResponseBodyTooLargeError } from "viem"

/** viem's own default `maxResponseBodySize`. */
const MAX_BODY_BYTES = 10 * 1024 * 1024

/** What viem's http transport reads of a `fetch` response. */
class RpcResponse {
  readonly body = null
  constructor(
    readonly status: number,
    private readonly rawHeaders: Record<string, string | Array<string> | undefined>,
    private readonly content: string
  ) {}
  get ok() {
    return this.status >= 200 && this.status < 300
  }
  get statusText() {
    return ""
  }
  get headers() {
    const raw = this.rawHeaders
    return {
      get: (name: string): string | null => {
        const v = raw[name.toLowerCase()]
        return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v
      }
    }
  }
  text() {
    return Promise.resolve(this.content)
  }
  json() {
    return Promise.resolve(JSON.parse(this.content) as unknown)
  }
}

/**
 * A `fetchFn` for viem's `http(rpcUrl, { fetchFn })`: every call to `rpcUrl`'s path over one pool
 * of keep-alive connections to its origin (idle sockets do not hold the process open). Network
 * failures reject as `fetch`'s do; viem wraps and retries them alike.
 */
export const pooledFetch = (rpcUrl: string): typeof fetch => {
  const url = new URL(rpcUrl)
  const pool = new Pool(url.origin)
  const path = `${url.pathname}${url.search}`
  const call = async (_input: unknown, init?: RequestInit) => {
    const response = await pool.request({
      path,
      method: (init?.method ?? "POST") as "POST",
      headers: (init?.headers ?? {}) as Record<string, string>,
      body: (init?.body ?? null) as string | null,
      signal: init?.signal ?? null
    })
    const chunks: Array<Buffer> = []
    let size = 0
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.byteLength
      if (size > MAX_BODY_BYTES) {
        response.body.destroy()
        throw new ResponseBodyTooLargeError({ maxSize: MAX_BODY_BYTES, size })
      }
      chunks.push(chunk)
    }
    const content = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")
    return new RpcResponse(response.statusCode, response.headers, content)
  }
  return call as unknown as typeof fetch
}
