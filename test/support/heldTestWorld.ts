/**
 * What a test run starts before its first file (globalSetup: embedded PostgreSQL, the local
 * chains, the migrated template), held until SIGTERM (then stopped as the run's end stops it) or
 * until it is killed outright. test/platform/KilledRun.test.ts kill -9's it, as a timeout kills
 * a test run, and checks that nothing it started outlives it. Prints "ready" once started; ends
 * (its teardown) on SIGTERM or when its stdin closes (the test that started it gone).
 *
 *   node --import tsx test/support/heldTestWorld.ts    (its cwd gets the run's .test-results)
 */
import setup from "./globalSetup.ts"

const provided: Record<string, unknown> = {}
const teardown = await setup({ provide: (key: string, value: unknown) => void (provided[key] = value) } as never)
process.stdout.write(`ready ${JSON.stringify({ pid: process.pid, pg: provided.pg })}\n`)
let ending = false
const end = () => {
  if (ending) return
  ending = true
  void teardown().then(() => process.exit(0), () => process.exit(1))
}
process.once("SIGTERM", end)
// Its parent (the test) gone: its stdin, a pipe from it, ends; so does this world.
process.stdin.once("end", end).resume()
// Held until then: the timer keeps the event loop alive.
setInterval(() => {}, 60_000)
