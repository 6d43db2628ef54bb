/**
 * Starts every time (issue 45 item 1): 10 starts in a row of the service process on its
 * embedded defaults (PostgreSQL, two local chains), each to ready and SIGTERM, while 2 CPU
 * burners keep the machine busy. Goal: 10 of 10 ready. Prints each start's time to ready and
 * how many progress lines ("waiting for readiness (12 s of 180 s)") it logged.
 *
 *   npx tsx bench/starts.ts           (about 10-15 minutes on the 2-core dev VM)
 */
import { Effect } from "effect"
import { burnCpu, startsInARow } from "../test/support/BusyStarts.ts"

const count = Number(process.env.STARTS ?? 10)
const figures = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  yield* burnCpu(2, 30 * 60_000)
  return yield* startsInARow(count)
})))
figures.forEach((f, i) => console.log(`start ${i + 1}: ready in ${f.seconds.toFixed(1)} s, ${f.progressLines} progress lines, ${f.metricsUrl}`))
const times = figures.map((f) => f.seconds).sort((a, b) => a - b)
console.log(`${figures.length} of ${count} ready; median ${times[Math.floor(times.length / 2)]!.toFixed(1)} s, slowest ${times.at(-1)!.toFixed(1)} s`)
