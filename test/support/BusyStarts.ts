/**
 * Starts of the service on its embedded defaults in a row while the machine is kept busy
 * (issue 45 item 1): CPU burners beside it, each a child process bounded in time, stopped
 * when the runs end. test/platform/BusyStart.test.ts runs a few, bench/starts.ts ten.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { freePort } from "../../src/platform/FreePort.ts"
import { startService, stopService } from "./ServiceProcess.ts"

/** `count` processes spinning on a core each for at most `ms` (they end on their own). */
export const burnCpu = (count: number, ms: number) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      Array.from({ length: count }, (): ChildProcess =>
        spawn(process.execPath, ["-e", `const end = Date.now() + ${ms}; while (Date.now() < end) {}`], { stdio: "ignore" })
      )
    ),
    (burners) => Effect.sync(() => burners.forEach((b) => b.kill("SIGKILL")))
  )

export interface StartFigure {
  readonly seconds: number
  readonly progressLines: number
  readonly metricsUrl: string | undefined
}

/**
 * `count` starts in a row, each to `GET /health/ready` and then SIGTERM (exit 0 asked), on a
 * DATA_DIR of their own; `METRICS_PORT` and `X402_FACILITATOR_PORT` are left unset (the embedded
 * defaults, as `npm start` runs: the facilitator funds its key on each chain at start). Fails on the first
 * start that does not become ready.
 */
export const startsInARow = (count: number, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const dataDir = `/tmp/das-busy-start-${process.pid}-${Date.now()}`
    const figures: Array<StartFigure> = []
    try {
      for (let i = 0; i < count; i++) {
        const port = String(yield* Effect.promise(() => freePort()))
        const began = Date.now()
        const service = yield* startService({ PORT: port, DATA_DIR: dataDir, ...env }, { unset: ["METRICS_PORT", "X402_FACILITATOR_PORT"] })
        const seconds = (Date.now() - began) / 1000
        const output = service.output()
        const metricsUrl = /"metrics: (http:\/\/[^ "]+)/.exec(output)?.[1]
        figures.push({ seconds, progressLines: output.split("waiting for readiness").length - 1, metricsUrl })
        const code = yield* stopService(service.child)
        if (code !== 0) return yield* Effect.die(new Error(`start ${i + 1}: exit ${code} on SIGTERM\n${output}`))
      }
      return figures
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
