/**
 * Runs the service. SIGTERM / SIGINT start a graceful drain (docs/operations.md, "Shutdown"):
 * readiness turns 503, the server stops accepting, in-flight requests finish within
 * `SHUTDOWN_DEADLINE`, background loops stop after their pass, then the pools close and any
 * embedded PostgreSQL and local chain stop. A shutdown asked for by a signal exits 0; a
 * failure exits 1. Under `npm start`, npm's death is such a signal (platform/FollowNpm.ts).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Exit, Layer } from "effect"
import { AppLive } from "./App.ts"
import { FollowNpmLive } from "./platform/FollowNpm.ts"
import { LoggingLive } from "./platform/Logging.ts"

Layer.launch(Layer.merge(FollowNpmLive, AppLive).pipe(Layer.provide(LoggingLive))).pipe(
  NodeRuntime.runMain({
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
  })
)
