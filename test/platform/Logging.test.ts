/** `LOG_LEVEL` (any case) sets the least severe level written; a bad value stops the start with a clear error. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, References } from "effect"
import { LoggingLive } from "../../src/platform/Logging.ts"

const minimumWith = (env: Record<string, string>) =>
  Effect.exit(
    Effect.gen(function*() {
      return yield* References.MinimumLogLevel
    }).pipe(Effect.provide(LoggingLive.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))))))
  )

describe("LOG_LEVEL", () => {
  it.effect("sets the minimum level, in any case; info by default", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* minimumWith({}), Exit.succeed("Info"))
      assert.deepStrictEqual(yield* minimumWith({ LOG_LEVEL: "debug" }), Exit.succeed("Debug"))
      assert.deepStrictEqual(yield* minimumWith({ LOG_LEVEL: "WARN", LOG_FORMAT: "json" }), Exit.succeed("Warn"))
      const bad = yield* minimumWith({ LOG_LEVEL: "verbose" })
      assert.isTrue(Exit.isFailure(bad))
      assert.include(String(Exit.isFailure(bad) ? bad.cause : ""), "LOG_LEVEL")
    }))
})
