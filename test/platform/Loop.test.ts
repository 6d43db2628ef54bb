/**
 * Background loops at shutdown (src/platform/Loop.ts): once the drain starts, a pass under way
 * finishes (it is not cut) and no new pass starts; a loop waiting between passes ends at once;
 * a pass still running at the deadline is interrupted. Without a drain, closing the scope
 * interrupts the loop at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { Lifecycle } from "../../src/platform/Lifecycle.ts"
import { runLoop } from "../../src/platform/Loop.ts"

const withLifecycle = (deadline: Duration.Input) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.provide(
    self,
    Layer.effect(Lifecycle, Lifecycle.make({ deadline: Duration.fromInputUnsafe(deadline), delay: Duration.zero }))
  )

describe("runLoop", () => {
  it.live("a pass under way when the drain starts finishes; no pass starts after it", () =>
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      const entered = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      let started = 0
      let finished = 0
      const scope = yield* Scope.make()
      yield* runLoop({
        name: "test",
        interval: Duration.millis(1),
        pass: Effect.gen(function*() {
          started++
          if (started === 3) {
            yield* Deferred.succeed(entered, undefined)
            yield* Deferred.await(release)
          }
          finished++
          return "worked" as const
        })
      }).pipe(Scope.provide(scope))
      yield* Deferred.await(entered)
      yield* lifecycle.startDrain("test")
      // The scope closes while the third pass is still under way: it waits for it.
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* Effect.sleep("50 millis")
      assert.strictEqual(finished, 2)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.await(closing)
      assert.strictEqual(finished, 3, "the pass under way was cut")
      yield* Effect.sleep("20 millis")
      assert.strictEqual(started, 3, "a pass started after the drain")
    }).pipe(withLifecycle("5 seconds")))

  it.live("a loop waiting between passes ends as soon as the drain starts", () =>
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      let passes = 0
      const scope = yield* Scope.make()
      yield* runLoop({ name: "test", interval: Duration.hours(1), pass: Effect.sync(() => (passes++, "idle" as const)) })
        .pipe(Scope.provide(scope))
      yield* Effect.sleep("20 millis")
      yield* lifecycle.startDrain("test")
      const start = Date.now()
      yield* Scope.close(scope, Exit.void)
      assert.isBelow(Date.now() - start, 1000)
      assert.strictEqual(passes, 1)
    }).pipe(withLifecycle("5 seconds")))

  it.live("a pass still running at the deadline is interrupted", () =>
    Effect.gen(function*() {
      const lifecycle = yield* Lifecycle
      const entered = yield* Deferred.make<void>()
      let interrupted = false
      const scope = yield* Scope.make()
      yield* runLoop({
        name: "stuck",
        interval: Duration.millis(1),
        pass: Deferred.succeed(entered, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))),
          Effect.as("worked" as const)
        )
      }).pipe(Scope.provide(scope))
      yield* Deferred.await(entered)
      yield* lifecycle.startDrain("test")
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(interrupted)
    }).pipe(withLifecycle("200 millis")))

  it.live("without a drain, closing the scope interrupts the loop at once", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<void>()
      let interrupted = false
      const scope = yield* Scope.make()
      yield* runLoop({
        name: "test",
        interval: Duration.millis(1),
        pass: Deferred.succeed(entered, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))),
          Effect.as("worked" as const)
        )
      }).pipe(Scope.provide(scope))
      yield* Deferred.await(entered)
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(interrupted)
    }))
})
