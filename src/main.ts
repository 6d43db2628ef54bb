/**
 * Runs the service. SIGTERM / SIGINT interrupt it: the server stops accepting,
 * in-flight requests finish, then the pools close and any embedded PostgreSQL and
 * local chain stop. A shutdown asked for by a signal exits 0; a failure exits 1.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Config, Effect, Exit, Layer, Logger } from "effect"
import { AppLive } from "./App.ts"
import { jsonLines } from "./platform/JsonLog.ts"

const LoggerLive = Layer.unwrap(
  Effect.map(Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty")), (format) =>
    format === "json" ? Logger.layer([jsonLines]) : Layer.empty)
)

Layer.launch(AppLive.pipe(Layer.provide(LoggerLive))).pipe(
  NodeRuntime.runMain({
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
  })
)
