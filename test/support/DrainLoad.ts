/**
 * The drain scenario (docs/operations.md, "Shutdown"), shared by its test
 * (test/platform/Drain.test.ts) and its benchmark (bench/drain.ts): keep-alive readers on a
 * service process, a readiness poller, slow requests in flight (a launchpad upstream that
 * answers late) and an open notifications stream; then SIGTERM. What each client saw, and
 * when, relative to the signal. With `SHUTDOWN_DELAY`, readiness is 503 while the listener still
 * accepts and answers (connections kept alive); once it closes, answers close their connections.
 */
import * as http from "node:http"
import type { FakeUpstream } from "../launchpad/FakeUpstream.ts"
import type { ServiceProcess } from "./ServiceProcess.ts"

export interface Outcome {
  readonly path: string
  readonly sentAt: number
  readonly at: number
  /** The connection was open (reused, or connected): the service had accepted it. */
  readonly accepted: boolean
  readonly status?: number
  readonly connectionClose?: boolean
  readonly error?: string
}

export const get = (port: number, agent: http.Agent, path: string): Promise<Outcome> =>
  new Promise((resolve) => {
    const sentAt = Date.now()
    let connected = false
    const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      res.resume()
      res.on("end", () =>
        resolve({
          path,
          sentAt,
          at: Date.now(),
          accepted: true,
          status: res.statusCode ?? 0,
          connectionClose: res.headers.connection === "close"
        }))
    })
    req.on("socket", (socket) => {
      if (req.reusedSocket) connected = true
      else socket.once("connect", () => (connected = true))
    })
    req.on("error", (e: NodeJS.ErrnoException) =>
      resolve({ path, sentAt, at: Date.now(), accepted: connected, error: e.code ?? e.message }))
  })

/** Requests `path` on one kept-alive connection (a new one when it closes) until the service refuses to connect. */
const reader = async (port: number, path: string, pauseMs: number, outcomes: Array<Outcome>) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    while (true) {
      const outcome = await get(port, agent, path)
      outcomes.push(outcome)
      if (outcome.error !== undefined) return
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs))
    }
  } finally {
    agent.destroy()
  }
}

export interface DrainRun {
  readonly signalAt: number
  /** When the service logged the start of its drain (its clock: the same machine's). */
  readonly drainAt: number
  /** When the service logged its listener's close (after `SHUTDOWN_DELAY`). */
  readonly stopAt: number
  /** Requests on a new connection each, sent `probeAfterMs` after the signal (during the delay). */
  readonly probes: ReadonlyArray<Outcome>
  readonly outcomes: ReadonlyArray<Outcome>
  readonly slow: ReadonlyArray<Outcome>
  readonly streamEndedAt: number
  readonly exitCode: number | null
  readonly exitAt: number
  readonly output: string
}

export interface DrainFigures {
  readonly drainStartedMs: number
  /** Signal → first readiness 503 received. */
  readonly readiness503Ms: number | undefined
  /** Readiness 200 to a request sent after the first 503 was received. */
  readonly readiness200After503: number
  /** Readiness 200 to a request sent after the service logged the start of its drain. */
  readonly readiness200AfterDrain: number
  /** Requests on an accepted connection that got no answer (reset, hung up). */
  readonly unanswered: ReadonlyArray<Outcome>
  readonly answeredAfterSignal: number
  readonly answeredTotal: number
  /** Answers to requests sent after the listener closed without `Connection: close`. */
  readonly keptAliveAfterStop: number
  /** Answers to requests sent between the drain's start and the listener's close (the delay). */
  readonly answeredDuringDelay: number
  /** Signal → the listener's close. */
  readonly stopMs: number
  readonly streamEndedMs: number
  readonly slowDoneMs: number
  readonly exitMs: number
}

export const figures = (run: DrainRun): DrainFigures => {
  const ready = run.outcomes.filter((o) => o.path === "/health/ready" && o.status !== undefined)
  const first503 = ready.find((o) => o.status === 503)
  const answered = run.outcomes.filter((o) => o.status !== undefined)
  return {
    drainStartedMs: run.drainAt - run.signalAt,
    readiness503Ms: first503 === undefined ? undefined : first503.at - run.signalAt,
    readiness200After503: first503 === undefined
      ? 0
      : ready.filter((o) => o.sentAt > first503.at && o.status === 200).length,
    // With a margin for the clocks' millisecond rounding, as below.
    readiness200AfterDrain: ready.filter((o) => o.sentAt > run.drainAt + 5 && o.status === 200).length,
    unanswered: [...run.outcomes, ...run.slow].filter((o) => o.error !== undefined && (o.accepted || o.error !== "ECONNREFUSED")),
    answeredAfterSignal: answered.filter((o) => o.at > run.signalAt).length,
    answeredTotal: answered.length,
    // Sent after the listener closed (with a margin for the clocks' millisecond rounding).
    keptAliveAfterStop: answered.filter((o) => o.sentAt > run.stopAt + 5 && o.connectionClose !== true).length,
    answeredDuringDelay: answered.filter((o) => o.sentAt > run.drainAt + 5 && o.at < run.stopAt - 5).length,
    stopMs: run.stopAt - run.signalAt,
    streamEndedMs: run.streamEndedAt - run.signalAt,
    slowDoneMs: Math.max(...run.slow.map((o) => o.at)) - run.signalAt,
    exitMs: run.exitAt - run.signalAt
  }
}

export const describeFigures = (f: DrainFigures, deadlineMs: number) =>
  `drain started ${f.drainStartedMs} ms after SIGTERM; readiness 503 after ${f.readiness503Ms} ms ` +
  `(${f.readiness200AfterDrain} readiness 200s to requests sent after the drain started); ${f.answeredAfterSignal} ` +
  `requests answered after the signal (${f.answeredTotal} in all; ${f.answeredDuringDelay} during the delay, listener closed after ` +
  `${f.stopMs} ms), ${f.unanswered.length} unanswered or reset; stream ended ` +
  `after ${f.streamEndedMs} ms; slow requests done after ${f.slowDoneMs} ms; exit after ${f.exitMs} ms (deadline ${deadlineMs} ms)`

/**
 * Runs the load on `service` (whose launchpad upstream is `upstream`) for `warmupMs`, starts
 * `slowRequests` that the upstream answers after `slowMs`, then SIGTERMs the service and waits
 * for everything to end.
 */
export const runDrain = async (options: {
  readonly service: ServiceProcess
  readonly upstream: FakeUpstream
  /** A session token, for the notifications stream. */
  readonly token: string
  readonly readers?: number
  readonly slowRequests?: number
  readonly slowMs?: number
  readonly warmupMs?: number
  /** Sends `/health/live` and `/health/ready` on new connections this long after the signal. */
  readonly probeAfterMs?: number
}): Promise<DrainRun> => {
  const { service, upstream } = options
  const port = Number(new URL(service.baseUrl).port)
  const stream = await fetch(`${service.baseUrl}/notifications/stream`, {
    headers: { authorization: `Bearer ${options.token}` }
  })
  if (stream.status !== 200) throw new Error(`the notifications stream answered ${stream.status}`)
  const streamEnded = (async () => {
    const body = stream.body!.getReader()
    try {
      while (!(await body.read()).done) {
        // heartbeats and events
      }
    } catch {
      // an abrupt end counts as ended too; its time tells whether it was the deadline's cut
    }
    return Date.now()
  })()

  const outcomes: Array<Outcome> = []
  const readers = [
    ...Array.from({ length: options.readers ?? 8 }, () => reader(port, "/health/live", 2, outcomes)),
    ...Array.from({ length: 2 }, () => reader(port, "/launchpad/tokens?chain=all", 2, outcomes)),
    // Several pollers, started apart: one request's own latency (tens of ms on a loaded
    // machine) would otherwise be the figure's resolution.
    ...Array.from({ length: 3 }, (_, i) =>
      new Promise<void>((r) => setTimeout(r, i * 7)).then(() => reader(port, "/health/ready", 5, outcomes)))
  ]
  await new Promise((r) => setTimeout(r, options.warmupMs ?? 700))

  upstream.delayMs = options.slowMs ?? 1500
  const tag = `slow${Date.now()}`
  const slowCount = options.slowRequests ?? 4
  const slow = Array.from({ length: slowCount }, (_, i) =>
    get(port, new http.Agent({ keepAlive: true }), `/launchpad/tokens?chain=base&search=${tag}-${i}`))
  // In flight for real: the service has taken each one and asked the upstream (a connection the
  // kernel completed but the service has not accepted yet is reset when the listener closes).
  const asked = () =>
    new Set(upstream.requests.flatMap((r) => [...r.params.values()].filter((v) => v.includes(tag)))).size
  for (let i = 0; i < 200 && asked() < slowCount; i++) await new Promise((r) => setTimeout(r, 25))

  const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
    service.child.once("exit", (code) => resolve({ code, at: Date.now() })))
  const signalAt = Date.now()
  service.child.kill("SIGTERM")
  const probes = options.probeAfterMs === undefined
    ? Promise.resolve([])
    : new Promise((r) => setTimeout(r, options.probeAfterMs)).then(() =>
      Promise.all(["/health/live", "/health/ready"].map((p) => get(port, new http.Agent({ keepAlive: false }), p)))
    )

  const slowDone = await Promise.all(slow)
  await Promise.all(readers)
  const streamEndedAt = await streamEnded
  const exit = await exited
  upstream.delayMs = 0
  const output = service.output()
  const loggedAt = (text: string) => {
    const line = output.split("\n").find((l) => l.includes(text))
    try {
      return line === undefined ? Number.NaN : Date.parse(JSON.parse(line).timestamp)
    } catch {
      return Number.NaN // not a JSON line: no time
    }
  }
  return {
    signalAt,
    drainAt: loggedAt("shutdown: started"),
    stopAt: loggedAt("shutdown: the HTTP listener closed"),
    probes: await probes,
    outcomes,
    slow: slowDone,
    streamEndedAt,
    exitCode: exit.code,
    exitAt: exit.at,
    output
  }
}
