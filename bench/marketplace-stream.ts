/**
 * Live stats stream benchmark: many concurrent subscribers on one server process.
 *
 *   npx tsx bench/marketplace-stream.ts
 *
 * Loopback only: a fake marketplace upstream (node:http) and the real
 * marketplace handlers on 127.0.0.1. Two phases:
 *   1. real SSE: BENCH_SSE_CLIENTS (default 10,000) HTTP connections to
 *      `GET /marketplace/agents/stream`, opened by a child process (so the server
 *      process holds one socket per subscriber and stays under the fd limit), on the
 *      fresh server (its memory is measured against the server before any subscriber);
 *   2. in-process: BENCH_HUB_SUBSCRIBERS (default 10,000) subscribers of the
 *      shared hub, each a fiber reading its subscription.
 * For each: memory, upstream polls and requests per poll interval (must stay
 * one), and the time from an upstream change to the last subscriber's event
 * (both from the change itself, which includes waiting for the next poll, and
 * from the upstream's answer to that poll, which is the fan-out). The SSE phase measures
 * BENCH_ROUNDS changes (default 21: single rounds of either side move by ±40 %), one per poll, after one unmeasured change (the warm-up),
 * and reports their median and spread. Node's own floor is measured in the same run,
 * round by round between the service's (BENCH_NODE_FLOOR=0 leaves it out): a bare
 * `node:http` server (its own process) writing one pre-framed event to as many SSE clients
 * (another process, the same client code), from the loop's start to the last client's read.
 * Then the disconnect: every client closes its socket at once, until the hub's last subscriber
 * left, BENCH_DISCONNECT_ROUNDS times (default 3, the clients opening again between rounds),
 * alternating with node's floor (until its server saw the last client end its side or its
 * response close, as the service's subscriber leaves); reported as
 * the median and as the service over the floor, round by round.
 * The server is the service's `NodeServer` (its node-level route serves the stream);
 * BENCH_PLAIN_SERVER=1 serves it through the HttpApi handler on a plain node server instead.
 * Waits are readiness-driven (a child's first message, the hub's count) with generous bounds
 * (a child's start BENCH_START_SECONDS, default 300; each opening of the connections
 * BENCH_OPEN_SECONDS, default 300) and say every 10 s what they still wait for: a loaded
 * host's `tsx` start took longer than the 20 s once allowed. Stops by itself (hard limit
 * BENCH_MAX_SECONDS, default 1200).
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { fork } from "node:child_process"
import { createServer } from "node:http"
import * as net from "node:net"
import { type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"
import { runInNewContext } from "node:vm"
import * as v8 from "node:v8"
import { StatsHub } from "../src/marketplace/StatsHub.ts"
import { report, spread } from "./support/results.ts"
import { agentFixture, type FakeUpstream, startFakeUpstream, wallet } from "../test/marketplace/FakeUpstream.ts"
import { MarketplaceServer, MarketplaceServerLive } from "../test/marketplace/server.ts"

const POLL_MS = 1_000
/** Changes measured one by one (each one poll apart); the fan-out is their median and spread. */
const fanOutRounds = Number(process.env.BENCH_ROUNDS ?? 21)
const LEADERBOARD = 10
/** Disconnects measured (10,000 clients each time), alternating with node's floor. */
const disconnectRounds = Number(process.env.BENCH_DISCONNECT_ROUNDS ?? 3)
/** Opening every SSE connection (10,000 by default), per opening. */
const openBoundMs = Number(process.env.BENCH_OPEN_SECONDS ?? 300) * 1000

// ---------------------------------------------------------------------------
// Child process: SSE clients
// ---------------------------------------------------------------------------

interface ToClient {
  readonly kind: "open" | "expect" | "close" | "exit"
  readonly url?: string
  readonly count?: number
  readonly volume?: number
}

/**
 * 10,000 SSE clients in one process: each a bare socket (HTTP/1.1 keep-alive, as a browser's
 * EventSource), looking for the expected change's bytes in what arrives. No HTTP parser or
 * string decoding per socket: the client's own CPU, on the same two cores, would otherwise
 * count as the server's fan-out time.
 */
const runClients = () => {
  const sockets: Array<net.Socket> = []
  const got: Array<number> = []
  let marker: Buffer | undefined
  let connected = 0
  let failed = 0
  const reasons = new Map<string, number>()
  const fail = (idx: number, reason: string) => {
    failed++
    got[idx] = -1
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
  }
  // Clients still waiting for the expected change: a count, not a scan of `got` per event.
  let waiting = 0
  const send = (m: object) => process.send!(m)
  const received = (idx: number) => {
    got[idx] = performance.timeOrigin + performance.now()
    if (--waiting === 0) send({ kind: "received", last: Math.max(...got), first: Math.min(...got.filter((t) => t > 0)) })
  }
  const tails: Array<Buffer | undefined> = []
  process.on("message", (m: ToClient) => {
    if (m.kind === "open") {
      const n = m.count!
      const url = new URL(m.url!)
      for (let i = 0; i < n; i++) got.push(0)
      let i = 0
      const settled = () => {
        if (connected + failed === n) send({ kind: "opened", connected, failed, reasons: Object.fromEntries(reasons) })
      }
      const openBatch = () => {
        // Open in batches so the server's accept queue is not flooded.
        for (let k = 0; k < 250 && i < n; k++, i++) {
          const idx = i
          const path = idx % 2 === 0 ? url.pathname : `${url.pathname}?wallets=${wallet(1)}`
          const socket = net.connect(Number(url.port), url.hostname)
          let opened = false
          socket.on("data", (chunk: Buffer) => {
            if (!opened) {
              opened = true
              const status = chunk.subarray(0, 12).toString("latin1")
              if (status === "HTTP/1.1 200") connected++
              else fail(idx, status)
              settled()
            }
            if (marker === undefined || got[idx] !== 0) return
            // The marker may straddle two reads: look in the previous read's tail too.
            const tail = tails[idx]
            const hay = tail === undefined ? chunk : Buffer.concat([tail, chunk])
            if (hay.includes(marker)) received(idx)
            else tails[idx] = hay.subarray(Math.max(0, hay.length - marker.length + 1))
          })
          socket.on("error", (e: NodeJS.ErrnoException) => {
            if (opened) return
            opened = true
            fail(idx, e.code ?? e.message)
            settled()
          })
          socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`)
          sockets.push(socket)
        }
        if (i < n) setTimeout(openBatch, 20)
      }
      openBatch()
    } else if (m.kind === "expect") {
      marker = Buffer.from(`"totalVolumeUsd":${m.volume!},`)
      tails.length = 0
      waiting = 0
      for (let k = 0; k < got.length; k++) {
        if (got[k]! > 0) got[k] = 0
        if (got[k] === 0) waiting++
      }
    } else if (m.kind === "close") {
      // Every socket closed in one loop (a crowd leaving at once); the process stays for the next open.
      for (const s of sockets) s.destroy()
      sockets.length = 0
      got.length = 0
      tails.length = 0
      marker = undefined
      connected = 0
      failed = 0
      reasons.clear()
      send({ kind: "closed" })
    } else if (m.kind === "exit") {
      for (const s of sockets) s.destroy()
      setTimeout(() => process.exit(0), 100)
    }
  })
  send({ kind: "ready" })
}

// ---------------------------------------------------------------------------
// Child process: node's floor, a bare node:http server (as bench/stream-node-floor.ts)
// ---------------------------------------------------------------------------

/**
 * A bare `node:http` server holding every SSE response it gets (head and first bytes
 * written, as the service's stream does). On `fire`, one event carrying `volume`, framed
 * once as an HTTP/1.1 chunk (as the service's hub does), is written to every socket in one
 * synchronous loop; it answers when the loop started. Its own process (file descriptors:
 * 10,000 sockets each for it and for the service's server).
 */
const runFloorServer = () => {
  const held = new Set<net.Socket>()
  // While a disconnect is watched: the CPU when it started; answered when the last client is gone.
  let watching: NodeJS.CpuUsage | undefined
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform" })
    res.write(": connected\nretry: 5000\n\n")
    const socket = res.socket!
    held.add(socket)
    // As the service's subscriber: gone at the client's end of the connection or the response's close.
    const leave = () => {
      if (!held.delete(socket)) return
      if (held.size === 0 && watching !== undefined) {
        const cpu = process.cpuUsage(watching)
        watching = undefined
        process.send!({ kind: "empty", at: performance.timeOrigin + performance.now(), cpuMs: (cpu.user + cpu.system) / 1000 })
      }
    }
    socket.once("end", leave)
    res.on("close", leave)
  })
  server.listen(0, "127.0.0.1", () => process.send!({ kind: "listening", port: (server.address() as net.AddressInfo).port }))
  process.on("message", (m: { kind: "fire"; volume: number } | { kind: "count" } | { kind: "watch" }) => {
    if (m.kind === "count") return process.send!({ kind: "count", held: held.size })
    if (m.kind === "watch") {
      watching = process.cpuUsage()
      return process.send!({ kind: "watching" })
    }
    // The same event as the service's: one agent's stat, as the hub frames it (`statFrame`).
    const stat = { walletAddress: `0x${"ab".repeat(20)}`, successRate: 0.95, totalJobs: 42, rating: 4.5, pricePerJobUsd: 1.5, totalVolumeUsd: m.volume, asOf: new Date().toISOString() }
    const data = Buffer.from(`data: ${JSON.stringify(stat)}\n\n`)
    const chunk = Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")])
    const at = performance.timeOrigin + performance.now()
    for (const socket of held) socket.write(chunk)
    process.send!({ kind: "fired", at, loopMs: performance.timeOrigin + performance.now() - at })
  })
}

// ---------------------------------------------------------------------------
// Parent: server, upstream, measurements
// ---------------------------------------------------------------------------

v8.setFlagsFromString("--expose_gc")
const gc = runInNewContext("gc") as () => void
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`
const memory = () => {
  gc()
  gc()
  const m = process.memoryUsage()
  return { heap: m.heapUsed, rss: m.rss }
}
const now = () => performance.timeOrigin + performance.now()
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))
/**
 * Waits for `check` (polled every 5 ms) up to `timeoutMs`, saying every 10 s what it still
 * waits for: on a loaded host a child's start alone (tsx compiling this file) can take tens
 * of seconds, so the bounds are generous and the wait shows it is alive.
 */
const until = async (check: () => boolean, timeoutMs: number, what: string, everyMs = 5) => {
  const started = Date.now()
  let said = started
  while (!check()) {
    const t = Date.now()
    if (t - started > timeoutMs) throw new Error(`timed out waiting for ${what} (${(timeoutMs / 1000).toFixed(0)} s)`)
    if (t - said >= 10_000) {
      said = t
      console.error(`… still waiting for ${what} (${((t - started) / 1000).toFixed(0)} s of at most ${(timeoutMs / 1000).toFixed(0)})`)
    }
    await wait(everyMs)
  }
}
/** A forked child's readiness (its first message): bounded by BENCH_START_SECONDS (default 300). */
const startBoundMs = Number(process.env.BENCH_START_SECONDS ?? 300) * 1000
/** Waits for the next message of `kind` after the ones already in `list`, sending with `send`. */
const nextMessage = async (
  list: ReadonlyArray<Record<string, unknown>>,
  kind: string,
  send: () => void,
  timeoutMs: number,
  what: string
) => {
  const count = () => list.reduce((n, m) => (m.kind === kind ? n + 1 : n), 0)
  const before = count()
  send()
  await until(() => count() > before, timeoutMs, what)
  return list.filter((m) => m.kind === kind).at(-1)!
}

const setVolume = (fake: FakeUpstream, n: number, volume: number) => {
  const agent = fake.state.agents.find((a) => a.walletAddress === wallet(n))!
  ;(agent.metrics as { grossAgenticAmount: number }).grossAgenticAmount = volume
}

/** The time the first leaderboard request after `t` reached the upstream (ms since epoch). */
const firstPollAfter = (fake: FakeUpstream, t: number) => {
  const r = fake.state.requests.find((q) => q.path === "/agents" && performance.timeOrigin + q.at >= t)
  // From its answer (handed to the socket), not its arrival: the upstream's own work is not the fan-out's.
  return r?.answered === undefined ? NaN : performance.timeOrigin + r.answered
}

const steadyPolls = async (fake: FakeUpstream, hub: StatsHub["Service"], intervals: number) => {
  const p0 = Effect.runSync(hub.stats).polls
  const r0 = fake.state.requests.length
  await wait(POLL_MS * intervals)
  const polls = Effect.runSync(hub.stats).polls - p0
  const requests = fake.state.requests.length - r0
  return { polls, requests, perPoll: requests / Math.max(1, polls) }
}

/** Node's floor (runFloorServer) with `count` clients of its own. */
const startFloor = async (count: number) => {
  const server = fork(new URL(import.meta.url).pathname, ["floor-server"], { execArgv: process.execArgv, stdio: "inherit" })
  const fromServer: Array<Record<string, unknown>> = []
  server.on("message", (m: Record<string, unknown>) => fromServer.push(m))
  await until(() => fromServer.some((m) => m.kind === "listening"), startBoundMs, "the floor server process to listen")
  const port = Number(fromServer.find((m) => m.kind === "listening")!.port)
  const clients = fork(new URL(import.meta.url).pathname, ["clients"], { execArgv: process.execArgv, stdio: "inherit" })
  const fromClients: Array<Record<string, unknown>> = []
  clients.on("message", (m: Record<string, unknown>) => fromClients.push(m))
  await until(() => fromClients.some((m) => m.kind === "ready"), startBoundMs, "the floor's client process to start")
  const open = async () => {
    await nextMessage(
      fromClients,
      "opened",
      () => clients.send({ kind: "open", url: `http://127.0.0.1:${port}/marketplace/agents/stream`, count } satisfies ToClient),
      openBoundMs,
      "the floor's SSE connections"
    )
    const opened = Number(fromClients.filter((m) => m.kind === "opened").at(-1)!.connected)
    for (let asked = 0; fromServer.filter((m) => m.kind === "count").at(-1)?.held !== opened; asked++) {
      if (asked > 600) throw new Error("the floor server does not hold every connection after 60 s")
      server.send({ kind: "count" })
      await wait(100)
    }
    await wait(500)
  }
  await open()
  return {
    open,
    /** Every client closes its socket at once; until node's server has seen the last client go. */
    disconnect: async () => {
      await nextMessage(fromServer, "watching", () => server.send({ kind: "watch" }), 10_000, "the floor server's watch")
      const closing = now()
      const empty = await nextMessage(fromServer, "empty", () => clients.send({ kind: "close" } satisfies ToClient), 60_000, "the floor's disconnect")
      return { gone: Number(empty.at) - closing, cpuMs: Number(empty.cpuMs) }
    },
    fire: async (volume: number) => {
      const answered = fromClients.filter((m) => m.kind === "received").length
      const fired = fromServer.filter((m) => m.kind === "fired").length
      clients.send({ kind: "expect", volume } satisfies ToClient)
      await wait(50)
      server.send({ kind: "fire", volume })
      await until(() => fromClients.filter((m) => m.kind === "received").length > answered, 30_000, "every floor client's event")
      await until(() => fromServer.filter((m) => m.kind === "fired").length > fired, 5_000, "the floor's loop")
      const got = fromClients.filter((m) => m.kind === "received").at(-1)!
      const done = fromServer.filter((m) => m.kind === "fired").at(-1)!
      return { last: Number(got.last) - Number(done.at), loopMs: Number(done.loopMs) }
    },
    stop: () => {
      clients.send({ kind: "exit" } satisfies ToClient)
      server.kill()
    }
  }
}

const main = async () => {
  const hubSubscribers = Number(process.env.BENCH_HUB_SUBSCRIBERS ?? 10_000)
  const sseClients = Number(process.env.BENCH_SSE_CLIENTS ?? 10_000)
  const hardLimit = setTimeout(() => {
    console.error("benchmark exceeded its time limit")
    process.exit(2)
  }, Number(process.env.BENCH_MAX_SECONDS ?? 1200) * 1000)
  hardLimit.unref()

  const fake = await startFakeUpstream()
  fake.state.agents = Array.from({ length: 30 }, (_, i) => agentFixture(i + 1, 100_000 - i * 1_000))
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(
    Layer.buildWithScope(
      MarketplaceServerLive({
        MARKETPLACE_API_URL: fake.url,
        MARKETPLACE_STREAM_POLL_INTERVAL: `${POLL_MS} millis`,
        MARKETPLACE_STREAM_HEARTBEAT: "15 seconds",
        MARKETPLACE_STREAM_LEADERBOARD_SIZE: String(LEADERBOARD),
        MARKETPLACE_STREAM_MAX_SUBSCRIBERS: String(Math.max(hubSubscribers, sseClients) + 100)
      }, { plainServer: process.env.BENCH_PLAIN_SERVER === "1" }),
      scope
    )
  )
  const { baseUrl } = Context.get(context, MarketplaceServer)
  const hub = Context.get(context, StatsHub)
  const results: Array<[string, string]> = []
  let marker = 200_000

  // -------- Phase 1: real SSE connections from a child process --------
  // First, on the fresh server: its memory over baseline is then what 10,000 connections
  // cost, not what is left of a heap an earlier phase already grew.
  if (sseClients > 0) {
    const base = memory()
    const child = fork(new URL(import.meta.url).pathname, ["clients"], { execArgv: process.execArgv, stdio: "inherit" })
    const messages: Array<Record<string, unknown>> = []
    child.on("message", (m: Record<string, unknown>) => messages.push(m))
    await until(() => messages.some((m) => m.kind === "ready"), startBoundMs, "the client process to start")
    const openClients = async () => {
      const opened = await nextMessage(
        messages,
        "opened",
        () => child.send({ kind: "open", url: `${baseUrl}/marketplace/agents/stream`, count: sseClients } satisfies ToClient),
        openBoundMs,
        "the service's SSE connections"
      )
      await until(() => Effect.runSync(hub.stats).subscribers === Number(opened.connected), 60_000, "server-side subscribers")
      return opened
    }
    const started = now()
    const opened = await openClients()
    const joined = now() - started
    await wait(POLL_MS * 2)
    const mem = memory()
    const steady = await steadyPolls(fake, hub, 5)
    // Node's floor in the same run: a bare node:http server in its own process, as many SSE
    // clients in another, opened after the service's memory was measured; its rounds alternate
    // with the service's, so drift on a shared machine hits both alike.
    const floor = sseClients > 0 && process.env.BENCH_NODE_FLOOR !== "0" ? await startFloor(sseClients) : undefined
    const floorRounds: Array<{ last: number; loopMs: number }> = []
    // BENCH_ROUNDS changes (default 21), one per poll, each round's fan-out measured alone, after
    // one unmeasured change that warms the write loop (a served stream writes one every poll).
    const rounds: Array<{ first: number; last: number; sinceChange: number; written: number; gcCount: number; gcMs: number; cpu: NodeJS.CpuUsage }> = []
    const received = () => messages.filter((m) => m.kind === "received")
    for (let round = -1; round < fanOutRounds; round++) {
      marker++
      const answered = received().length
      child.send({ kind: "expect", volume: marker } satisfies ToClient)
      await wait(50)
      const gcs: Array<PerformanceEntry> = []
      const gcObserver = new PerformanceObserver((list) => gcs.push(...list.getEntries()))
      gcObserver.observe({ entryTypes: ["gc"] })
      const t0 = now()
      const cpu0 = process.cpuUsage()
      setVolume(fake, 1, marker)
      await until(() => received().length > answered, 30_000, "every SSE client's event")
      const cpu = process.cpuUsage(cpu0)
      gcObserver.disconnect()
      const got = received().at(-1)!
      const poll = firstPollAfter(fake, t0)
      const written = Effect.runSync(hub.stats).deliveredAt ?? NaN
      // Collections that started between the upstream's answer and the last write (the fan-out itself).
      const during = gcs.filter((g) => performance.timeOrigin + g.startTime >= poll && performance.timeOrigin + g.startTime <= written)
      if (floor !== undefined) {
        await wait(200)
        const f = await floor.fire(++marker)
        if (round >= 0) floorRounds.push(f)
      }
      if (round < 0) continue
      rounds.push({
        first: Number(got.first) - poll,
        last: Number(got.last) - poll,
        sinceChange: Number(got.last) - t0,
        written: written - poll,
        gcCount: during.length,
        gcMs: during.reduce((a, g) => a + g.duration, 0),
        cpu
      })
    }
    const fanOuts = spread(rounds.map((r) => r.last))
    const median = [...rounds].sort((a, b) => a.last - b.last)[rounds.length >> 1]!
    const each = (f: (r: (typeof rounds)[number]) => number) => rounds.map((r) => f(r).toFixed(1)).join(", ")
    const cpu = median.cpu
    const fanOut = fanOuts.median
    const rssMb = (mem.rss - base.rss) / 1024 / 1024
    report({
      path: `stream: upstream answer → last of ${sseClients} SSE clients`,
      service: fanOut,
      baseline: 0,
      unit: "ms",
      goal: "≤ 100 ms",
      met: fanOut <= 100,
      spread: fanOuts
    })
    if (floor !== undefined) {
      const floors = spread(floorRounds.map((r) => r.last))
      // Round by round: the service's fan-out over node's in the same pass.
      const ratios = spread(rounds.map((r, i) => r.last / floorRounds[i]!.last))
      report({
        path: `stream: upstream answer → last of ${sseClients}, over node:http's own fan-out (same run)`,
        service: ratios.median,
        baseline: 1,
        unit: "ratio",
        goal: "≤ 1.1×",
        met: ratios.median <= 1.1,
        spread: ratios
      })
      results.push(
        ["  node:http floor: write → last client", `${floorRounds.map((r) => r.last.toFixed(1)).join(", ")} ms (median ${floors.median.toFixed(1)}; its loop ${floorRounds.map((r) => r.loopMs.toFixed(1)).join(", ")} ms)`],
        ["  service / floor, round by round", `${rounds.map((r, i) => (r.last / floorRounds[i]!.last).toFixed(2)).join(", ")} (median ${ratios.median.toFixed(2)}×)`]
      )
    }
    report({ path: `stream: server RSS over baseline, ${sseClients} clients`, service: rssMb, baseline: 0, unit: "MB", goal: "≤ 100 MB", met: rssMb <= 100 })
    results.push(
      ["SSE connections (real sockets)", `${opened.connected} connected, ${opened.failed} failed ${JSON.stringify(opened.reasons)} (opened in ${joined.toFixed(0)} ms)`],
      [
        "  server memory (heap / rss over baseline)",
        `${mb(mem.heap - base.heap)} / ${mb(mem.rss - base.rss)}  (${((mem.heap - base.heap) / 1024 / Number(opened.connected)).toFixed(1)} KB heap per connection)`
      ],
      ["  polls over 5 intervals", `${steady.polls} polls, ${steady.requests} upstream requests (${steady.perPoll.toFixed(2)} per poll)`],
      ["  change → last client", `${each((r) => r.sinceChange)} ms (${rounds.length} changes; poll interval ${POLL_MS} ms)`],
      ["  upstream answer → first / last client", `${each((r) => r.first)} / ${each((r) => r.last)} ms (median of last ${fanOut.toFixed(1)})`],
      // The server's side alone: when the hub's loop had written the change to every socket.
      ["  upstream answer → written to every socket", `${each((r) => r.written)} ms`],
      ["  GC during the fan-out", `${rounds.map((r) => `${r.gcCount} (${r.gcMs.toFixed(1)} ms)`).join(", ")}`],
      // CPU time is less at the mercy of other work on the machine than the wall-clock figures.
      ["  server CPU, change → last client (median round)", `${((cpu.user + cpu.system) / 1000).toFixed(1)} ms (user ${(cpu.user / 1000).toFixed(1)}, system ${(cpu.system / 1000).toFixed(1)})`]
    )
    // Disconnect: every client closes its socket at once, BENCH_DISCONNECT_ROUNDS times (default
    // 3; the clients open again between rounds), alternating with node's floor (its server sees
    // the last client go) and alternating which goes first, so drift hits both alike.
    const service = async () => {
      const closeCpu0 = process.cpuUsage()
      const closing = now()
      child.send({ kind: "close" } satisfies ToClient)
      // Every 50 ms: `hub.stats` walks every subscriber, and polled every 5 ms while 10,000 leave
      // it was a third of the server's CPU counted for the disconnect (the floor has no such poll).
      await until(() => Effect.runSync(hub.stats).subscribers === 0, 60_000, "server-side cleanup", 50)
      // The check above runs on a timer, so it also waits for the event loop to be free of the
      // connections' teardown; the hub's own clock says when the last subscriber actually left.
      const loopFree = now() - closing
      const closeCpu = process.cpuUsage(closeCpu0)
      const emptiedAt = Effect.runSync(hub.stats).emptiedAt
      return { gone: emptiedAt === undefined ? loopFree : emptiedAt - closing, loopFree, cpuMs: (closeCpu.user + closeCpu.system) / 1000 }
    }
    const disconnects: Array<{ gone: number; loopFree: number; cpuMs: number }> = []
    const floorDisconnects: Array<{ gone: number; cpuMs: number }> = []
    for (let round = 0; round < disconnectRounds; round++) {
      if (round > 0) {
        await openClients()
        await floor?.open()
        await wait(POLL_MS)
      }
      if (floor !== undefined && round % 2 === 1) floorDisconnects.push(await floor.disconnect())
      disconnects.push(await service())
      if (floor !== undefined && round % 2 === 0) floorDisconnects.push(await floor.disconnect())
    }
    floor?.stop()
    const gones = spread(disconnects.map((d) => d.gone))
    const gone = gones.median
    results.push(
      ["  disconnect → all subscribers gone", `${disconnects.map((d) => d.gone.toFixed(0)).join(", ")} ms (hub's clock; median ${gone.toFixed(0)})`],
      [
        "  disconnect → cleanup seen by a timer",
        `${disconnects.map((d) => d.loopFree.toFixed(0)).join(", ")} ms (server CPU ${disconnects.map((d) => d.cpuMs.toFixed(0)).join(", ")} ms)`
      ]
    )
    report({ path: "stream: disconnect → all subscribers gone", service: gone, baseline: 0, unit: "ms", goal: "≤ 1000 ms", met: gone <= 1000, spread: gones })
    if (floorDisconnects.length === disconnects.length) {
      const ratios = spread(disconnects.map((d, i) => d.gone / floorDisconnects[i]!.gone))
      results.push(
        [
          "  node:http floor: disconnect → last client gone",
          `${floorDisconnects.map((d) => d.gone.toFixed(0)).join(", ")} ms (server CPU ${floorDisconnects.map((d) => d.cpuMs.toFixed(0)).join(", ")} ms)`
        ],
        ["  disconnect, service / floor, round by round", `${disconnects.map((d, i) => (d.gone / floorDisconnects[i]!.gone).toFixed(2)).join(", ")} (median ${ratios.median.toFixed(2)}×)`]
      )
      report({
        path: `stream: disconnect of ${sseClients}, over node:http's own (same run)`,
        service: ratios.median,
        baseline: 1,
        unit: "ratio",
        goal: "≤ 1.2×",
        met: ratios.median <= 1.2,
        spread: ratios
      })
    }
    child.send({ kind: "exit" } satisfies ToClient)
  }

  // -------- Phase 2: in-process subscribers of the shared hub --------
  {
    const base = memory()
    const received = new Float64Array(hubSubscribers)
    let expected = -1
    const subScope = Effect.runSync(Scope.make())
    const started = now()
    for (let i = 0; i < hubSubscribers; i++) {
      const filter = i % 2 === 0 ? { _tag: "All" } as const : { _tag: "Wallets", wallets: [wallet(1) as never] } as const
      Effect.runFork(
        Effect.scoped(Effect.gen(function*() {
          const sub = yield* hub.subscribe(filter)
          while (true) {
            const batch = yield* sub.take
            for (const s of batch.stats) if (s.totalVolumeUsd === expected && received[i] === 0) received[i] = now()
          }
        })).pipe(Effect.forkIn(subScope), Effect.asVoid)
      )
    }
    await until(() => Effect.runSync(hub.stats).subscribers === hubSubscribers, 30_000, "hub subscribers")
    const joined = now() - started
    await wait(POLL_MS * 2) // first polls + snapshots settle
    const mem = memory()
    const steady = await steadyPolls(fake, hub, 5)
    marker++
    expected = marker
    const t0 = now()
    setVolume(fake, 1, marker)
    await until(() => received.every((t) => t > 0), 10_000, "every hub subscriber's event")
    const last = Math.max(...received)
    const poll = firstPollAfter(fake, t0)
    results.push(
      ["hub subscribers (in-process)", `${hubSubscribers} (joined in ${joined.toFixed(0)} ms)`],
      ["  memory (heap / rss over baseline)", `${mb(mem.heap - base.heap)} / ${mb(mem.rss - base.rss)}  (${((mem.heap - base.heap) / hubSubscribers).toFixed(0)} B heap per subscriber)`],
      ["  polls over 5 intervals", `${steady.polls} polls, ${steady.requests} upstream requests (${steady.perPoll.toFixed(2)} per poll)`],
      ["  change → last subscriber", `${(last - t0).toFixed(1)} ms (poll interval ${POLL_MS} ms)`],
      ["  upstream answer → last subscriber", `${(last - poll).toFixed(1)} ms`]
    )
    await Effect.runPromise(Scope.close(subScope, Exit.void))
    await until(() => Effect.runSync(hub.stats).subscribers === 0, 10_000, "hub subscribers to leave")
  }

  console.log("\nmarketplace stream benchmark (loopback, one server process)")
  const width = Math.max(...results.map(([k]) => k.length))
  for (const [k, v] of results) console.log(`${k.padEnd(width)}  ${v}`)
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await fake.close()
  process.exit(0)
}

if (process.argv[2] === "clients") runClients()
else if (process.argv[2] === "floor-server") runFloorServer()
else {
  main().catch((e) => {
    console.error(e)
    process.exit(1)
  })
}
