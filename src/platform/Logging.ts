/**
 * The process's logger (docs/operations.md, "Logs"): `LOG_FORMAT` (`pretty`, or `json`: one
 * JSON object per line, src/platform/JsonLog.ts) and `LOG_LEVEL` (the least severe level
 * written: `trace`, `debug`, `info` (default), `warn`, `error`, `fatal`, `none`; any case).
 * The access line's own level is the edge's (`LOG_ACCESS_LEVEL`, src/api/EdgeConfig.ts).
 */
import { Config, ConfigProvider, Effect, Layer, Logger, type LogLevel, References } from "effect"
import { jsonLines } from "./JsonLog.ts"

const levels: ReadonlyArray<LogLevel.LogLevel> = ["All", "Fatal", "Error", "Warn", "Info", "Debug", "Trace", "None"]

/** A log level by name, in any case (`debug`, `DEBUG`, `Debug`). */
export const logLevelConfig = (name: string, fallback: LogLevel.LogLevel) =>
  Config.String(name).pipe(
    Config.mapEffect((raw) => {
      const level = levels.find((l) => l.toLowerCase() === raw.trim().toLowerCase())
      return level === undefined
        ? Effect.fail(
          new Config.ConfigError(
            new ConfigProvider.SourceError({ message: `${name}: expected one of ${levels.join(", ")} (any case), got "${raw}"` })
          )
        )
        : Effect.succeed(level)
    }),
    Config.withDefault(fallback)
  )

export const LoggingLive = Layer.unwrap(
  Effect.gen(function*() {
    const format = yield* Config.Literals(["pretty", "json"], "LOG_FORMAT").pipe(Config.withDefault("pretty"))
    const minimum = yield* logLevelConfig("LOG_LEVEL", "Info")
    const level = Layer.succeed(References.MinimumLogLevel, minimum)
    return format === "json" ? Layer.merge(Logger.layer([jsonLines]), level) : level
  })
)
