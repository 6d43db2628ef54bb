/**
 * The process's shutdown, as everything that takes work sees it (docs/operations.md,
 * "Shutdown"). A drain starts once (the HTTP server closing on SIGTERM starts it): from then
 * on readiness answers 503, kept-alive connections close after their current request, open
 * streams end (their clients reconnect, elsewhere), and background loops stop after their
 * current pass. Whatever is still running at the deadline (`SHUTDOWN_DEADLINE`, counted from
 * the start of the drain) is cut.
 *
 * Provided once per process, below everything that reads it; a layer composed without it
 * (unit tests) never drains and is simply interrupted when its scope closes.
 */
import { Config, Context, Duration, Effect, Latch, Layer } from "effect"

export interface LifecycleShape {
  /** Whether the drain has started (a plain read, for the request path). */
  readonly isDraining: () => boolean
  /** Starts the drain (once; later calls do nothing) and logs it. */
  readonly startDrain: (reason: string) => Effect.Effect<void>
  /** Waits until the drain starts. */
  readonly whenDraining: Effect.Effect<void>
  /** How long the drain may take, from its start. */
  readonly deadline: Duration.Duration
  /**
   * How long the HTTP server still accepts new connections once the drain has started (readiness
   * answering 503 meanwhile, each connection closed after one request): time for a load balancer
   * that checks readiness on new connections to see it. Counted within the deadline.
   */
  readonly delay: Duration.Duration
  /** What is left of the deadline now (the whole of it before the drain starts). */
  readonly remaining: () => Duration.Duration
}

export const ShutdownConfig = Config.all({
  deadline: Config.Duration("SHUTDOWN_DEADLINE").pipe(Config.withDefault(Duration.seconds(20))),
  delay: Config.Duration("SHUTDOWN_DELAY").pipe(Config.withDefault(Duration.zero))
})

export class Lifecycle extends Context.Service<Lifecycle, LifecycleShape>()("das/platform/Lifecycle") {
  static readonly make = ({ deadline, delay }: { readonly deadline: Duration.Duration; readonly delay: Duration.Duration }) =>
    Effect.gen(function*() {
      const started = Latch.makeUnsafe(false)
      let since: number | undefined
      const deadlineMs = Duration.toMillis(deadline)
      const startDrain = (reason: string) =>
        Effect.suspend(() => {
          if (since !== undefined) return Effect.void
          since = Date.now()
          started.openUnsafe()
          return Effect.logInfo(`shutdown: started (${reason}); draining for at most ${Duration.format(deadline)}`)
        })
      // The last finalizer of the process's layers: every other part has stopped by then.
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() =>
          since === undefined ? Effect.void : Effect.logInfo(`shutdown: complete after ${Date.now() - since} ms`)
        )
      )
      return Lifecycle.of({
        isDraining: () => since !== undefined,
        startDrain,
        whenDraining: started.await,
        deadline,
        delay: Duration.min(delay, deadline),
        remaining: () =>
          Duration.millis(since === undefined ? deadlineMs : Math.max(0, deadlineMs - (Date.now() - since)))
      })
    })

  static readonly layer = Layer.effect(Lifecycle, Effect.flatMap(ShutdownConfig, Lifecycle.make))
}
