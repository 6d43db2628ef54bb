/**
 * The process's shutdown, as everything that takes work sees it (docs/operations.md,
 * "Shutdown"). A drain starts once: in the signal's own handler (`Lifecycle.layer` listens for
 * SIGTERM and SIGINT ahead of the runtime's interruption), or when the HTTP server closes. The
 * runtime's interruption then closes the layers from the top, each finalizer already seeing the
 * drain (a loop waits for its pass instead of being cut). From then
 * on readiness answers 503, kept-alive connections close after their current request once the
 * listener has closed (after `SHUTDOWN_DELAY`), open
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
  /**
   * Calls `f` synchronously when the drain starts (at once if it has), for code outside any fiber
   * (the HTTP server); returns its removal.
   */
  readonly onDrainUnsafe: (f: () => void) => () => void
  /** How long the drain may take, from its start. */
  readonly deadline: Duration.Duration
  /**
   * How long the HTTP server still accepts and answers once the drain has started, connections
   * kept alive (readiness answering 503 meanwhile): time for a load balancer to take the process
   * out. Then the listener closes and each connection closes after its answer. Counted within
   * the deadline.
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
  static readonly make = (
    { deadline, delay, signals = [] }: {
      readonly deadline: Duration.Duration
      readonly delay: Duration.Duration
      /** Signals that start the drain in their own handler (the process's: `Lifecycle.layer`). */
      readonly signals?: ReadonlyArray<NodeJS.Signals>
    }
  ) =>
    Effect.gen(function*() {
      const started = Latch.makeUnsafe(false)
      const listeners = new Set<() => void>()
      let since: number | undefined
      const deadlineMs = Duration.toMillis(deadline)
      /** Flips the drain, synchronously: true if this call started it. */
      const begin = (): boolean => {
        if (since !== undefined) return false
        since = Date.now()
        started.openUnsafe()
        for (const f of listeners) f()
        listeners.clear()
        return true
      }
      const logStart = (reason: string) =>
        Effect.logInfo(`shutdown: started (${reason}); draining for at most ${Duration.format(deadline)}`)
      const startDrain = (reason: string) => Effect.suspend(() => (begin() ? logStart(reason) : Effect.void))

      if (signals.length > 0) {
        const log = Effect.runForkWith(yield* Effect.context<never>())
        const onSignal = (signal: NodeJS.Signals) => {
          // Before anything else: readiness reads `since`, the server and the loops are told now.
          if (begin()) log(logStart(signal))
        }
        // Prepended: the runtime's own listener (NodeRuntime.runMain, installed first) interrupts
        // the main fiber, whose finalizers must already see the drain.
        for (const signal of signals) process.prependListener(signal, onSignal)
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            for (const signal of signals) process.removeListener(signal, onSignal)
          })
        )
      }
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
        onDrainUnsafe: (f) => {
          if (since !== undefined) {
            f()
            return () => {}
          }
          listeners.add(f)
          return () => void listeners.delete(f)
        },
        deadline,
        delay: Duration.min(delay, deadline),
        remaining: () =>
          Duration.millis(since === undefined ? deadlineMs : Math.max(0, deadlineMs - (Date.now() - since)))
      })
    })

  /** The process's: SIGTERM and SIGINT start the drain. */
  static readonly layer = Layer.effect(
    Lifecycle,
    Effect.flatMap(ShutdownConfig, (config) => Lifecycle.make({ ...config, signals: ["SIGTERM", "SIGINT"] }))
  )
}
