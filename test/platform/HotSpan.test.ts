/**
 * Spans only where something can see them: with no exporter configured the service turns the
 * tracer off (`TelemetryLive`), and a hot path's span (`hotSpan`) is then not made at all;
 * with a tracer, it is the same span `Effect.withSpan` makes, parented as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, References, Tracer } from "effect"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { hotSpan } from "../../src/platform/HotSpan.ts"
import { TelemetryLive } from "../../src/platform/Telemetry.ts"

const recording = () => {
  const names: Array<string> = []
  const tracer = Tracer.make({ span: (options) => (names.push(options.name), Tracer.nativeTracer.span(options)) })
  return { names, tracer }
}

const inner = Effect.map(
  Effect.serviceOption(Tracer.ParentSpan),
  (span) => (span._tag === "Some" && span.value._tag === "Span" ? span.value.name : "none")
)

describe("spans", () => {
  it.effect("hotSpan makes the span when tracing is on, and nothing when it is off", () =>
    Effect.gen(function*() {
      const on = recording()
      const traced = yield* hotSpan("Hot.path")(inner).pipe(Effect.withTracer(on.tracer))
      assert.strictEqual(traced, "Hot.path", "the effect runs inside its span")
      assert.deepStrictEqual(on.names, ["Hot.path"])

      const off = recording()
      const untraced = yield* hotSpan("Hot.path")(inner).pipe(
        Effect.withTracer(off.tracer),
        Effect.provideService(References.TracerEnabled, false)
      )
      assert.strictEqual(untraced, "none")
      assert.deepStrictEqual(off.names, [], "no span made")
    }))

  it.effect("with no OTLP endpoint the service's tracer is off; with one it is on", () =>
    Effect.gen(function*() {
      const enabled = (config: Record<string, string>) =>
        Effect.flatMap(References.TracerEnabled, Effect.succeed).pipe(
          Effect.provide(TelemetryLive.pipe(
            Layer.provide(AppConfig.layer),
            Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config)))
          ))
        )
      assert.isFalse(yield* enabled({}))
      assert.isTrue(yield* enabled({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" }))
    }))
})
