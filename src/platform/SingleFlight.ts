/**
 * One run per key at a time in this process: a caller asking for a key while a run of it is
 * in flight waits for that run and gets its outcome (success, failure or defect alike). A run
 * whose own caller went away (interrupted) hands nothing on: its waiters run again themselves.
 * Nothing is kept once a run ends. Each waiter must have been authorized on its own before it
 * joins: the run is the first caller's.
 */
import { Cause, Deferred, Effect } from "effect"

export const makeSingleFlight = () => {
  const inFlight = new Map<string, Deferred.Deferred<unknown, unknown>>()
  const run = <A, E, R>(key: string, work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const running = inFlight.get(key) as Deferred.Deferred<A, E> | undefined
      if (running !== undefined) {
        return Deferred.await(running).pipe(
          Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? run(key, work) : Effect.failCause(cause))
        )
      }
      const deferred = Deferred.makeUnsafe<A, E>()
      inFlight.set(key, deferred as Deferred.Deferred<unknown, unknown>)
      return work.pipe(Effect.onExit((exit) => {
        inFlight.delete(key)
        return Deferred.done(deferred, exit)
      }))
    })
  return run
}
