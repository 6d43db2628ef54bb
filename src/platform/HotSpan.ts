import { Effect, References } from "effect"

/**
 * `Effect.withSpan(name)` for the hot paths, skipped when tracing is off. With no exporter
 * a span is a no-op one, yet `withSpan` still copies the request's context twice (the
 * parent span, the stack frame) for it; this reads one flag instead (docs/performance.md,
 * "GET /accounts", step 4).
 */
export const hotSpan = (name: string) => {
  const traced = Effect.withSpan(name)
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(References.TracerEnabled, (enabled) => (enabled ? traced(self) : self))
}
