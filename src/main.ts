/**
 * Runs the service. SIGTERM / SIGINT interrupt it: the server stops accepting,
 * in-flight requests finish, then the pools close and any embedded PostgreSQL and
 * local chain stop. A shutdown asked for by a signal exits 0; a failure exits 1.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Config, Duration, Effect, Exit, Layer, Logger } from "effect"
import { AppLive } from "./App.ts"

/**
 * JSON lines are written in batches (every 20 ms, and at shutdown), not one synchronous
 * write per line: stdout is a pipe or a file in a deployment, where every write blocks the
 * event loop, and each request logs a line (docs/performance.md, docs/decisions.md).
 */
const jsonLines = Logger.batched(Logger.formatJson, {
  window: Duration.millis(20),
  flush: (lines) => Effect.sync(() => void process.stdout.write(`${lines.join("\n")}\n`))
})

const LoggerLive = Layer.unwrap(
  Effect.map(Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty")), (format) =>
    format === "json" ? Logger.layer([jsonLines]) : Layer.empty)
)

Layer.launch(AppLive.pipe(Layer.provide(LoggerLive))).pipe(
  NodeRuntime.runMain({
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
  })
)
