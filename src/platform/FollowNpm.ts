/**
 * Run by `npm start`, the service ends with npm (issue 45, "nothing left behind"). The start script
 * execs node, so npm itself is the service's parent: when npm is killed (kill -9 included) the
 * service is re-parented, and it then drains as on SIGTERM, which stops its own children (their
 * guards, ChildProcess.ts). Only under `npm start` (npm's `npm_lifecycle_event`): a service started
 * by other means may be detached from its parent on purpose.
 */
import { Config, Effect, Layer, Schema } from "effect"

/** How often the parent is looked at: a killed npm's service is draining within about a second. */
const EVERY_MS = 1_000

export const FollowNpmLive = Layer.effectDiscard(Effect.gen(function*() {
  const event = yield* Config.schema(Schema.String, "npm_lifecycle_event").pipe(Config.withDefault(""))
  if (event !== "start") return
  const parent = process.ppid
  const timer = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(timer)
    process.kill(process.pid, "SIGTERM")
  }, EVERY_MS)
  timer.unref()
  yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(timer)))
  yield* Effect.logDebug(`npm start: the service ends when npm (pid ${parent}) does`)
}))
