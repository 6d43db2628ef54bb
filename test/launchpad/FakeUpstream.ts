/**
 * A stand-in for the public launchpad upstreams (token API and vp-api klines) on
 * 127.0.0.1, answering in their recorded formats (see ../../../shared/upstreams.md and
 * docs/launchpad.md), over deterministic fixtures for three chains. Tests switch its
 * behaviour (down, slow, 500, malformed) and read its request log.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export type UpstreamChainName = "BASE" | "SOLANA" | "ROBINHOOD"

export interface FakeToken {
  readonly id: number
  readonly name: string
  readonly symbol: string
  readonly status: 1 | 2
  readonly tokenAddress: string | null
  readonly preToken: string | null
  readonly holderCount: number
  readonly mcapInVirtual: number
  readonly image: { readonly url: string } | null
  readonly chain: UpstreamChainName
  readonly lpCreatedAt: string
  readonly createdAt: string
  readonly priceUsd: number
  readonly fdv: number
  readonly volume24h: number
  readonly liquidityUsd: number
  readonly priceChangePercent24h: number
}

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

const mulberry32 = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const syllables = ["lu", "na", "ai", "vir", "tu", "al", "ze", "ro", "kai", "mo", "xi", "sen", "ti", "ent", "pro", "to"]
const HEX = "0123456789abcdef"
const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

export const fixtureCounts: Record<UpstreamChainName, number> = { BASE: 260, SOLANA: 170, ROBINHOOD: 110 }

export const makeFixtures = (): ReadonlyArray<FakeToken> => {
  const rand = mulberry32(7)
  const pick = (s: string, n: number) => Array.from({ length: n }, () => s[Math.floor(rand() * s.length)]).join("")
  const tokens: Array<FakeToken> = []
  let id = 1
  for (const chain of ["BASE", "SOLANA", "ROBINHOOD"] as const) {
    for (let i = 0; i < fixtureCounts[chain]; i++) {
      const words = 1 + Math.floor(rand() * 2)
      const name = Array.from({ length: words }, () => {
        const w = syllables[Math.floor(rand() * syllables.length)] +
          syllables[Math.floor(rand() * syllables.length)]
        return w[0]!.toUpperCase() + w.slice(1)
      }).join(" ")
      const symbol = name.replace(/ /g, "").slice(0, 3 + Math.floor(rand() * 3)).toUpperCase()
      const address = chain === "SOLANA"
        ? pick(B58, 44)
        // Mixed case on purpose: EVM addresses must compare case-insensitively.
        : "0x" + pick(HEX, 40).replace(/[a-f]/g, (c) => (rand() < 0.5 ? c.toUpperCase() : c))
      const status: 1 | 2 = rand() < 0.3 ? 2 : 1
      // Coarse values so that ties within and across chains are common.
      const volume24h = Math.round(rand() ** 3 * 60) * 500
      const mcapInVirtual = Math.round(rand() ** 2 * 400) * 250
      const createdMs = Date.UTC(2024, 9, 16) + Math.floor(rand() * 5000) * 3_600_000
      const priceUsd = Number((mcapInVirtual * 0.0000012 + rand() * 0.0001).toFixed(8))
      tokens.push({
        id: id++,
        name,
        symbol,
        status,
        // Prototypes on the bonding curve sometimes have only the bonding token.
        tokenAddress: status === 1 && rand() < 0.15 ? null : address,
        preToken: address,
        holderCount: Math.floor(rand() * 20000),
        mcapInVirtual,
        image: rand() < 0.1 ? null : { url: `https://img.example/${chain.toLowerCase()}/${id}.png` },
        chain,
        lpCreatedAt: new Date(createdMs).toISOString(),
        createdAt: new Date(createdMs - 600_000).toISOString(),
        priceUsd,
        fdv: Number((priceUsd * 1_000_000_000).toFixed(2)),
        volume24h,
        liquidityUsd: Math.round(rand() * 500000),
        priceChangePercent24h: Number(((rand() - 0.5) * 80).toFixed(2))
      })
    }
  }
  return tokens
}

export const addressOf = (t: FakeToken): string => (t.tokenAddress ?? t.preToken)!

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

export type FakeMode = "ok" | "down" | "status500" | "malformed" | "wrongShape" | "hang"

export interface LoggedRequest {
  readonly path: string
  readonly params: URLSearchParams
}

export interface FakeUpstream {
  readonly url: string
  readonly tokens: ReadonlyArray<FakeToken>
  /** How every request is answered from now on. */
  mode: FakeMode
  /** Added before every answer (also in `ok` mode), e.g. to hold requests in flight. */
  delayMs: number
  readonly requests: Array<LoggedRequest>
  count(path: string): number
  reset(): void
  close(): Promise<void>
}

const sortable = new Set(["volume24h", "mcapInVirtual", "lpCreatedAt", "createdAt", "holderCount"])

const listTokens = (all: ReadonlyArray<FakeToken>, params: URLSearchParams) => {
  let rows = all.slice()
  const chain = params.get("filters[chain]")
  if (chain !== null) rows = rows.filter((t) => t.chain === chain)
  const status = params.get("filters[status]")
  if (status !== null) rows = rows.filter((t) => String(t.status) === status)
  const or: Array<[string, string]> = []
  for (const [k, v] of params) {
    const m = /^filters\[\$or\]\[\d+\]\[(\w+)\]\[\$contains\]$/.exec(k)
    if (m) or.push([m[1]!, v.toLowerCase()])
  }
  if (or.length > 0) {
    rows = rows.filter((t) =>
      or.some(([field, v]) => {
        const value = (t as unknown as Record<string, unknown>)[field]
        return typeof value === "string" && value.toLowerCase().includes(v)
      })
    )
  }
  const sort = params.get("sort[0]")
  if (sort !== null) {
    const [field, dir] = sort.split(":")
    if (!sortable.has(field!) || dir !== "desc") return { status: 400, body: { error: { status: 400, message: "bad sort" } } }
    const key = (t: FakeToken) => {
      const v = (t as unknown as Record<string, unknown>)[field!]
      return typeof v === "string" ? Date.parse(v) : (v as number)
    }
    // The upstream's order: key descending, ties by address (codepoint order).
    rows.sort((a, b) => key(b) - key(a) || (addressOf(a) < addressOf(b) ? -1 : addressOf(a) > addressOf(b) ? 1 : 0))
  }
  const page = Math.max(1, Number(params.get("pagination[page]") ?? "1"))
  // Like the Strapi default: page size capped at 100.
  const pageSize = Math.min(100, Math.max(1, Number(params.get("pagination[pageSize]") ?? "25")))
  const total = rows.length
  return {
    status: 200,
    body: {
      data: rows.slice((page - 1) * pageSize, page * pageSize),
      meta: { pagination: { page, pageSize, pageCount: Math.ceil(total / pageSize), total } }
    }
  }
}

const klineChain: Record<string, UpstreamChainName> = { "0": "BASE", "1": "SOLANA", "2": "ROBINHOOD" }

/** Deterministic close price of a token at a time: what the history tests recompute. */
export const fakeClose = (address: string, t: number): number => {
  let h = 0
  for (const c of address) h = (h * 31 + c.charCodeAt(0)) | 0
  return Number((1 + Math.abs(Math.sin(h + t / 3_600_000)) * 0.5).toFixed(6))
}

const klines = (all: ReadonlyArray<FakeToken>, params: URLSearchParams) => {
  const address = params.get("tokenAddress") ?? ""
  const g = Number(params.get("granularity")) * 1000
  const start = Number(params.get("start"))
  const end = Number(params.get("end"))
  const limit = Number(params.get("limit"))
  const chain = klineChain[params.get("chainID") ?? "0"]
  if (!(g > 0) || !(end > start) || !(limit > 0)) return { status: 400, body: { code: 400, msg: "bad params" } }
  const token = all.find((t) => t.chain === chain && addressOf(t).toLowerCase() === address.toLowerCase())
  const out: Array<Record<string, unknown>> = []
  if (token !== undefined) {
    const created = Date.parse(token.lpCreatedAt)
    for (let t = Math.ceil(Math.max(start, created) / g) * g; t < end; t += g) {
      const close = fakeClose(address, t)
      out.push({
        granularity: g / 1000,
        tokenAddress: address,
        open: String(close * 0.99),
        high: String(close * 1.02),
        low: String(close * 0.97),
        close: String(close),
        volume: "1234.5",
        startInMilli: t,
        endInMilli: t + g - 1
      })
    }
  }
  // Newest `limit` candles, newest first (the client must not rely on upstream order).
  return { status: 200, body: { code: 0, msg: "success", data: { Klines: out.slice(-limit).reverse() } } }
}

export const startFakeUpstream = (): Promise<FakeUpstream> =>
  new Promise((resolve, reject) => {
    const tokens = makeFixtures()
    const state = {
      mode: "ok" as FakeMode,
      delayMs: 0,
      requests: [] as Array<LoggedRequest>
    }
    const sockets = new Set<import("node:net").Socket>()
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1")
      state.requests.push({ path: url.pathname, params: url.searchParams })
      const mode = state.mode
      const answer = () => {
        if (mode === "down") return void req.socket.destroy()
        if (mode === "hang") return // never answers
        if (mode === "status500") {
          res.writeHead(500, { "content-type": "application/json" })
          return void res.end(JSON.stringify({ error: { status: 500, name: "InternalServerError" } }))
        }
        if (mode === "malformed") {
          res.writeHead(200, { "content-type": "application/json" })
          return void res.end("{\"data\": [ {\"id\": 1, ")
        }
        if (mode === "wrongShape") {
          res.writeHead(200, { "content-type": "application/json" })
          return void res.end(JSON.stringify({ data: { items: "nope" }, meta: {} }))
        }
        const result = url.pathname === "/api/virtuals"
          ? listTokens(tokens, url.searchParams)
          : url.pathname === "/vp-api/klines"
          ? klines(tokens, url.searchParams)
          : { status: 404, body: { error: "not found" } }
        res.writeHead(result.status, { "content-type": "application/json" })
        res.end(JSON.stringify(result.body))
      }
      if (state.delayMs > 0) setTimeout(answer, state.delayMs)
      else answer()
    })
    server.on("connection", (s) => {
      sockets.add(s)
      s.on("close", () => sockets.delete(s))
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const fake: FakeUpstream = {
        url: `http://127.0.0.1:${port}`,
        tokens,
        get mode() {
          return state.mode
        },
        set mode(m) {
          state.mode = m
        },
        get delayMs() {
          return state.delayMs
        },
        set delayMs(d) {
          state.delayMs = d
        },
        requests: state.requests,
        count: (path) => state.requests.filter((r) => r.path === path).length,
        reset: () => {
          state.mode = "ok"
          state.delayMs = 0
          state.requests.length = 0
        },
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy()
            server.close(() => done())
          })
      }
      resolve(fake)
    })
  })

/** The fake as a scoped resource, for `layer(...)` / `it.effect` tests. */
export const fakeUpstream = Effect.acquireRelease(
  Effect.promise(() => startFakeUpstream()),
  (fake) => Effect.promise(() => fake.close())
)
