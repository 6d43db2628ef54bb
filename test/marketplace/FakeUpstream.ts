/**
 * A stand-in for the public marketplace (ACP) on 127.0.0.1: a real node:http
 * server answering in the upstream's formats (`{ data: … }` envelopes, Strapi
 * `meta.pagination`, both agent generations), with switchable failure modes.
 */
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export type Mode = "ok" | "down" | "slow" | "500" | "malformed" | "wrong-shape"

export interface RawAgentFixture {
  [k: string]: unknown
  walletAddress?: string
  name: string
}

export interface FakeState {
  mode: Mode
  /** How long "slow" waits before answering. */
  slowMs: number
  agents: Array<RawAgentFixture>
  jobs: Array<Record<string, unknown>>
  /** When true, `/agents` answers without `meta.pagination` (bare array). */
  omitMeta: boolean
  /** When true, `/jobs` ignores the client filter (to prove the service re-checks ownership). */
  leakyJobs: boolean
  /** requestId → null (pending) | token issued on approval. */
  auth: Map<string, string | null>
  /** token → wallet returned by `/agents/lite`. */
  tokens: Map<string, string>
  /** Every request: path and query, in order. */
  requests: Array<{
    readonly path: string
    readonly query: URLSearchParams
    readonly authorization?: string
    /** `performance.now()` when the request arrived. */
    readonly at: number
    /** `performance.now()` when its answer was handed to the socket (`/agents` only). */
    answered?: number
  }>
  /** Transport faults still to inject before answering normally (then "ok"). */
  dropNext: number
}

export interface FakeUpstream {
  readonly url: string
  readonly state: FakeState
  readonly count: (path: string | RegExp) => number
  readonly close: () => Promise<void>
}

export const wallet = (n: number): string => `0x${n.toString(16).padStart(40, "0")}`

/** A newer-shape agent with metrics (volume = grossAgenticAmount). */
export const agentFixture = (n: number, volume: number, extra: Partial<RawAgentFixture> = {}): RawAgentFixture => ({
  id: n,
  name: `Agent ${n}`,
  description: `Does task number ${n}`,
  imageUrl: `https://img.example/${n}.png`,
  walletAddress: wallet(n),
  rating: 4.5,
  chains: [{ chainId: 8453, tokenAddress: wallet(10_000 + n) }],
  offerings: [
    {
      name: `offer-${n}`,
      description: "An offering",
      deliverable: "a report",
      requirements: { type: "object", properties: { topic: { type: "string" } } },
      slaMinutes: 30,
      priceType: "fixed",
      priceValue: 2 + n / 100,
      requiredFunds: false
    }
  ],
  metrics: {
    successfulJobCount: 10 + n,
    successRate: 0.9,
    uniqueBuyerCount: 3,
    totalJobCount: 12 + n,
    grossAgenticAmount: volume,
    revenue: volume / 10,
    volumeHistory: [{ timestamp: "2026-01-01T00:00:00.000Z", value: volume / 2 }]
  },
  ...extra
})

const send = (res: http.ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const volumeOf = (a: RawAgentFixture): number =>
  Number((a.metrics as { grossAgenticAmount?: number } | undefined)?.grossAgenticAmount ?? 0)

const handle = (state: FakeState, req: http.IncomingMessage, res: http.ServerResponse) => {
  const url = new URL(req.url ?? "/", "http://x")
  const path = url.pathname
  const q = url.searchParams
  const at = performance.now()
  const entry: FakeState["requests"][number] = req.headers.authorization === undefined
    ? { path, query: q, at }
    : { path, query: q, authorization: req.headers.authorization, at }
  state.requests.push(entry)
  if (state.dropNext > 0) {
    state.dropNext--
    req.socket.destroy()
    return
  }
  switch (state.mode) {
    case "down":
      req.socket.destroy()
      return
    case "500":
      return send(res, 500, { error: "internal" })
    case "malformed":
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{\"data\": [ {\"name\": ")
      return
    case "wrong-shape":
      return send(res, 200, { data: { unexpected: true } })
    case "slow":
      setTimeout(() => {
        if (!res.writableEnded && !res.destroyed) send(res, 200, { data: [] })
      }, state.slowMs)
      return
    case "ok":
      break
  }

  let m: RegExpMatchArray | null
  if (path === "/agents") {
    const start = Number(q.get("pagination[start]") ?? 0)
    const limit = Number(q.get("pagination[limit]") ?? 25)
    const sorted = [...state.agents].sort((a, b) => volumeOf(b) - volumeOf(a))
    const data = sorted.slice(start, start + limit)
    send(res, 200, state.omitMeta ? data : { data, meta: { pagination: { start, limit, total: sorted.length } } })
    entry.answered = performance.now()
    return
  }
  if (path === "/agents/search") {
    const query = (q.get("query") ?? "").toLowerCase()
    const chainIds = q.get("chainIds")?.split(",").map(Number)
    const topK = Number(q.get("topK") ?? 5)
    const hits = state.agents.filter((a) =>
      `${a.name} ${String(a.description ?? "")}`.toLowerCase().includes(query) &&
      (chainIds === undefined ||
        ((a.chains as Array<{ chainId: number }> | undefined) ?? []).some((c) => chainIds.includes(c.chainId)))
    )
    return send(res, 200, { data: hits.slice(0, topK) })
  }
  if ((m = path.match(/^\/agents\/wallet\/(0x[0-9a-fA-F]+)$/))) {
    const w = m[1]!.toLowerCase()
    const agent = state.agents.find((a) => a.walletAddress?.toLowerCase() === w)
    return agent === undefined ? send(res, 404, { error: "not found" }) : send(res, 200, { data: agent })
  }
  if (path === "/agents/lite") {
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
    const w = state.tokens.get(token)
    return w === undefined ? send(res, 401, { error: "unauthorized" }) : send(res, 200, { data: [{ id: 1, walletAddress: w }] })
  }
  if (path === "/jobs") {
    const clients = (q.get("clientAddress") ?? "").toLowerCase().split(",")
    const jobs = state.leakyJobs
      ? state.jobs
      : state.jobs.filter((j) => clients.includes(String(j.clientAddress).toLowerCase()))
    return send(res, 200, { data: jobs })
  }
  if ((m = path.match(/^\/jobs\/(\d+)\/([^/]+)$/))) {
    const job = state.jobs.find((j) => String(j.chainId) === m![1] && String(j.onChainJobId ?? j.id) === m![2])
    return job === undefined ? send(res, 404, { error: "not found" }) : send(res, 200, { data: job })
  }
  if (path === "/auth/lite/auth-url") {
    const requestId = `req-${state.auth.size + 1}`
    state.auth.set(requestId, null)
    return send(res, 200, { data: { authUrl: `https://login.example/approve?r=${requestId}`, requestId } })
  }
  if (path === "/auth/lite/auth-status") {
    const requestId = q.get("requestId") ?? ""
    if (!state.auth.has(requestId)) return send(res, 404, { error: "expired" })
    const token = state.auth.get(requestId)
    return send(res, 200, { data: token === null ? null : { token } })
  }
  send(res, 404, { error: "no route" })
}

export const startFakeUpstream = (): Promise<FakeUpstream> =>
  new Promise((resolve) => {
    const state: FakeState = {
      mode: "ok",
      slowMs: 2_000,
      agents: [],
      jobs: [],
      leakyJobs: false,
      omitMeta: false,
      auth: new Map(),
      tokens: new Map(),
      requests: [],
      dropNext: 0
    }
    const sockets = new Set<import("node:net").Socket>()
    const server = http.createServer((req, res) => handle(state, req, res))
    server.on("connection", (s) => {
      sockets.add(s)
      s.on("close", () => sockets.delete(s))
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        state,
        count: (p) => state.requests.filter((r) => (typeof p === "string" ? r.path === p : p.test(r.path))).length,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy()
            server.close(() => done())
          })
      })
    })
  })

/** The fake upstream as a scoped resource. */
export const fakeUpstream = Effect.acquireRelease(
  Effect.promise(startFakeUpstream),
  (u) => Effect.promise(u.close)
)

/** Approve a pending connect request: the upstream now answers a token for `walletAddress`. */
export const approve = (state: FakeState, requestId: string, walletAddress: string) => {
  const token = `tok-${requestId}`
  state.auth.set(requestId, token)
  state.tokens.set(token, walletAddress)
}
