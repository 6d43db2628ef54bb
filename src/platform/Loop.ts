/**
 * A background loop (the follower, the relay's reconciler, the anchorer, retention, webhook
 * delivery): a pass, a wait, again, for the life of the scope.
 *
 * - Shutdown: once the process drains (`Lifecycle`), the loop starts no new pass; a pass under
 *   way finishes (a sleeping loop wakes at once and ends). The scope's close waits for it until
 *   the drain's deadline, then interrupts it. Without a drain (a test's scope closing) it is
 *   interrupted at once, as any scoped fiber.
 * - Tracing: each pass is a root span `loop <name>`; a pass that found nothing to do says so
 *   (`"idle"`) and its span, with everything under it, is not exported (Telemetry.ts), so an
 *   idle service sends no span per tick.
 */
import { Duration, Effect, Fiber, Option, type Scope } from "effect"
import { Lifecycle } from "./Lifecycle.ts"

/** What a pass did: nothing (`idle`), some work (`worked`), or some with more waiting (`more`: no wait). */
export type PassOutcome = "idle" | "worked" | "more"

/** Span attributes the telemetry reads (Telemetry.ts, `IdleLoopFilter`). */
export const LOOP_ATTRIBUTE = "das.loop"
export const IDLE_ATTRIBUTE = "das.loop.idle"

export interface LoopOptions<R> {
  /** Names the pass's span (`loop <name>`). */
  readonly name: string
  /** One pass. Its failures are its own to handle (log, and let the next pass retry). */
  readonly pass: Effect.Effect<PassOutcome, never, R>
  readonly interval: Duration.Duration
  /** A wait before the first pass (none by default). */
  readonly initialDelay?: Duration.Duration | undefined
  /** Ends the wait between passes early (e.g. a wake-up at the commit of new work): the interval is then a fallback. */
  readonly wake?: Effect.Effect<void> | undefined
}

export const runLoop = <R>(options: LoopOptions<R>): Effect.Effect<void, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const lifecycle = yield* Effect.serviceOption(Lifecycle)
    const draining = Option.isSome(lifecycle) ? lifecycle.value.isDraining : () => false
    const stopping = Option.isSome(lifecycle) ? lifecycle.value.whenDraining : Effect.never
    const wait = (d: Duration.Duration) => Effect.raceFirst(Effect.sleep(d), stopping)

    const pass = options.pass.pipe(
      Effect.tap((outcome) => (outcome === "idle" ? Effect.annotateCurrentSpan(IDLE_ATTRIBUTE, true) : Effect.void)),
      Effect.withSpan(`loop ${options.name}`, { root: true, attributes: { [LOOP_ATTRIBUTE]: options.name } })
    )
    const body = Effect.gen(function*() {
      if (options.initialDelay !== undefined) yield* wait(options.initialDelay)
      while (!draining()) {
        const outcome = yield* pass
        if (outcome !== "more" && !draining()) {
          yield* (options.wake === undefined ? wait(options.interval) : Effect.raceFirst(wait(options.interval), options.wake))
        }
      }
    })
    const fiber = yield* Effect.forkDetach(body)
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        if (!draining() || Option.isNone(lifecycle)) return Fiber.interrupt(fiber)
        const left = lifecycle.value.remaining()
        return Fiber.await(fiber).pipe(
          Effect.timeoutOption(left),
          Effect.flatMap((done) =>
            Option.isSome(done)
              ? Effect.void
              : Effect.logWarning(`shutdown: ${options.name} still running at the deadline; interrupted`).pipe(
                Effect.andThen(Fiber.interrupt(fiber))
              )
          )
        )
      })
    )
  })
