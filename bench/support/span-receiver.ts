/**
 * A loopback OTLP/HTTP (JSON) trace receiver for benchmarks: point a service's
 * `OTEL_EXPORTER_OTLP_ENDPOINT` at it, then ask which spans a kind of request spends its
 * time in (median duration per span name over the traces whose root matches).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  /** 2 = server */
  readonly kind?: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: { readonly stringValue?: string } }>
}

export const startSpanReceiver = async () => {
  const spans: Array<Span> = []
  const server = createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString("utf8")))
    req.on("end", () => {
      try {
        const payload = JSON.parse(body) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans: Array<Span> }> }> }
        for (const rs of payload.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans)
      } catch {
        // not JSON: ignored
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const ms = (s: Span) => Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6
  const attr = (s: Span, key: string) => s.attributes?.find((a) => a.key === key)?.value.stringValue

  /**
   * The spans of the last trace whose server span matches (or of trace `traceId`), in start
   * order: offset from its start, duration, name, statement.
   */
  const lastTrace = (method: string, urlPath: string, traceId?: string) => {
    const matching = spans.filter((s) => s.kind === 2)
      .filter((s) => attr(s, "http.request.method") === method && (attr(s, "url.path") ?? attr(s, "http.url") ?? "").includes(urlPath))
    const root = traceId === undefined ? matching.at(-1) : matching.find((s) => s.traceId === traceId)
    if (root === undefined) return []
    return spans.filter((s) => s.traceId === root.traceId)
      .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
      .map((s) => ({
        at: Number(BigInt(s.startTimeUnixNano) - BigInt(root.startTimeUnixNano)) / 1e6,
        ms: ms(s),
        name: s.name,
        statement: attr(s, "db.query.text") ?? attr(s, "db.statement")
      }))
  }
  /** Median and count per span name, over traces whose server span matches `method url`. */
  const breakdown = (method: string, urlPath: string) => {
    const roots = spans.filter((s) => s.kind === 2)
      .filter((s) => attr(s, "http.request.method") === method && (attr(s, "url.path") ?? attr(s, "http.url") ?? "").includes(urlPath))
    const traces = new Set(roots.map((r) => r.traceId))
    const byName = new Map<string, Array<number>>()
    for (const s of spans) {
      if (!traces.has(s.traceId)) continue
      const list = byName.get(s.name) ?? []
      list.push(ms(s))
      byName.set(s.name, list)
    }
    const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
    return {
      traces: traces.size,
      rows: [...byName].map(([name, xs]) => ({ name, perRequest: xs.length / Math.max(1, traces.size), medianMs: median(xs) }))
        .sort((a, b) => b.medianMs * b.perRequest - a.medianMs * a.perRequest)
    }
  }
  /**
   * Where in the server span each span lies: per span name, the median offset of its start
   * and of its end from the start of the matching server span (first occurrence per trace),
   * and the server spans' own durations in start order (to pair with a client's timings).
   */
  const timeline = (method: string, urlPath: string) => {
    const roots = spans.filter((s) => s.kind === 2)
      .filter((s) => attr(s, "http.request.method") === method && (attr(s, "url.path") ?? attr(s, "http.url") ?? "").includes(urlPath))
      .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
    const rootOf = new Map(roots.map((r) => [r.traceId, r]))
    const at = (s: Span, r: Span, end: boolean) =>
      Number(BigInt(end ? s.endTimeUnixNano : s.startTimeUnixNano) - BigInt(r.startTimeUnixNano)) / 1e6
    const byName = new Map<string, { starts: Array<number>; ends: Array<number> }>()
    // A name repeated within a trace is told apart by its rank in start order (#2, #3…).
    const rank = new Map<string, number>()
    const inStartOrder = spans.filter((s) => rootOf.has(s.traceId))
      .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
    for (const s of inStartOrder) {
      const r = rootOf.get(s.traceId)!
      const base = s === r ? "(server span)" : s.kind === 3 ? `${s.name} (client)` : s.name
      const k = (rank.get(`${s.traceId} ${base}`) ?? 0) + 1
      rank.set(`${s.traceId} ${base}`, k)
      const name = k === 1 ? base : `${base} #${k}`
      const e = byName.get(name) ?? { starts: [], ends: [] }
      e.starts.push(at(s, r, false))
      e.ends.push(at(s, r, true))
      byName.set(name, e)
    }
    const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
    return {
      rows: [...byName].map(([name, e]) => ({ name, startMs: median(e.starts), endMs: median(e.ends) }))
        .sort((a, b) => a.startMs - b.startMs),
      serverMs: roots.map(ms),
      /** Start and end of each server span, ms since the epoch. */
      serverWindows: roots.map((r) => ({ start: Number(BigInt(r.startTimeUnixNano) / 1000n) / 1000, end: Number(BigInt(r.endTimeUnixNano) / 1000n) / 1000 }))
    }
  }
  /**
   * Per request (server span matching `method` and a path containing `urlPath`, started after
   * `sinceMs` since the epoch): the time covered by spans whose name matches `external` (the
   * union of their intervals: calls made at once count once), and the rest of the server span.
   */
  const ownTime = (method: string, urlPath: string, external: RegExp, sinceMs = 0) => {
    const nanos = (t: string) => Number(BigInt(t) / 1000n) / 1000
    const roots = spans.filter((s) => s.kind === 2)
      .filter((s) => attr(s, "http.request.method") === method && (attr(s, "url.path") ?? attr(s, "http.url") ?? "").includes(urlPath))
      .filter((s) => nanos(s.startTimeUnixNano) >= sinceMs)
    const byTrace = new Map<string, Array<Span>>()
    for (const s of spans) if (external.test(s.name)) byTrace.set(s.traceId, [...(byTrace.get(s.traceId) ?? []), s])
    const names = new Map<string, number>()
    const own: Array<number> = []
    const chain: Array<number> = []
    let slowestOwn: { readonly traceId: string; readonly ms: number } | undefined
    for (const r of roots) {
      const calls = (byTrace.get(r.traceId) ?? []).map((s) => [nanos(s.startTimeUnixNano), nanos(s.endTimeUnixNano)] as const)
        .sort((a, b) => a[0] - b[0])
      for (const s of byTrace.get(r.traceId) ?? []) names.set(s.name, (names.get(s.name) ?? 0) + 1)
      let covered = 0
      let end = -Infinity
      for (const [a, b] of calls) {
        if (b <= end) continue
        covered += b - Math.max(a, end)
        end = b
      }
      chain.push(covered)
      own.push(ms(r) - covered)
      if (slowestOwn === undefined || ms(r) - covered > slowestOwn.ms) slowestOwn = { traceId: r.traceId, ms: ms(r) - covered }
    }
    return {
      own,
      chain,
      /** The trace whose own part was the longest. */
      slowestOwn,
      names: [...names].map(([n, c]) => `${n} × ${(c / Math.max(1, roots.length)).toFixed(1)}`)
    }
  }
  return { url, spans, breakdown, timeline, ownTime, lastTrace, close: () => new Promise<void>((r) => server.close(() => r())) }
}
