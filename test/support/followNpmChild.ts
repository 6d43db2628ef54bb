/**
 * A stand-in for the service under `npm start` (test/platform/FollowNpm.test.ts): the real
 * FollowNpmLive beside a layer whose finalizer says the drain ran, launched as main.ts launches
 * the service. Prints "ready" once both are up.
 */
import { NodeRuntime } from "@effect/platform-node"
import * as fs from "node:fs"
import { Cause, Effect, Exit, Layer } from "effect"
import { FollowNpmLive } from "../../src/platform/FollowNpm.ts"

const drainedFile = process.argv[2]!
const Drains = Layer.effectDiscard(Effect.gen(function*() {
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.writeFileSync(drainedFile, "drained")))
  yield* Effect.sync(() => console.log("ready"))
}))

Layer.launch(Layer.merge(FollowNpmLive, Drains)).pipe(
  NodeRuntime.runMain({
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
  })
)
