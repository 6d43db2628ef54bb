/**
 * Group commit across keys (docs/audit-log.md, "Group commit"): units of work submitted
 * while a write is in flight wait, and when it ends the waiting units (up to `maxSize`
 * in all) go out together in ONE write. `AppendQueue` serializes each account's appends
 * and hands its batches here as units, so units in one write are of different accounts,
 * and appends on many accounts share one statement and one commit.
 *
 * A combined write can be refused as a whole: an entry PostgreSQL refuses, or one unit's
 * account held by someone else's transaction for too long (the statement gives up on its
 * lock). Then every unit of it is written `alone`, each in a fiber of its own, and the
 * next combined write does not wait for them: one slow account never holds up the rest
 * for longer than the combined write's own limit.
 *
 * A unit submitted while the combiner is idle is written by its caller, at once, in the
 * caller's fiber (interrupted as any statement is). Units that wait are written by a fiber
 * of the combiner's (forked into the scope it was made in), so once submitted they are
 * written exactly once whatever their callers do: interrupting one only stops it waiting
 * (as a statement already sent). Closing the scope interrupts that fiber; units still
 * waiting end with the interruption, never written.
 */
import { type Cause, Deferred, Effect, Exit, type Scope } from "effect"

export interface Combiner<U, R> {
  /** Writes `unit`, with whatever other units are waiting, and waits for its result. */
  readonly write: (unit: U) => Effect.Effect<R>
}

interface Waiting<U, R> {
  readonly unit: U
  readonly done: Deferred.Deferred<R>
}

export const make = <U, R, E>(options: {
  /** How much a unit counts toward `maxSize` (its entries). */
  readonly size: (unit: U) => number
  /** Most in one combined write; a unit larger than this still goes, alone in its write. */
  readonly maxSize: number
  /** Writes units together, one result per unit in order; a failure means nothing was written. */
  readonly together: (units: ReadonlyArray<U>) => Effect.Effect<ReadonlyArray<R>, E>
  /** Writes one unit on its own, after `together` failed; it may wait (it holds up nobody). */
  readonly alone: (unit: U) => Effect.Effect<R>
  /** Told why a combined write was refused, before its units go alone. */
  readonly refused: (error: E, units: number) => Effect.Effect<void>
}): Effect.Effect<Combiner<U, R>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const waiting: Array<Waiting<U, R>> = []
    let running = false

    /** The next write's units: the oldest waiting, up to `maxSize` entries (at least one unit). */
    const take = (): Array<Waiting<U, R>> => {
      let n = 0
      let size = 0
      while (n < waiting.length && (n === 0 || size + options.size(waiting[n]!.unit) <= options.maxSize)) {
        size += options.size(waiting[n]!.unit)
        n++
      }
      return waiting.splice(0, n)
    }

    const alone = (w: Waiting<U, R>) =>
      Effect.forkIn(Effect.flatMap(Effect.exit(options.alone(w.unit)), (exit) => Deferred.done(w.done, exit)), scope)

    /** The units of the combined write in flight (told how it ended if the writer stops in it). */
    let inFlight: Array<Waiting<U, R>> = []

    const writes = Effect.gen(function*() {
      while (true) {
        // Let every submitter already scheduled (those the last write answered, most of
        // all) add its unit before the next write is cut.
        yield* Effect.yieldNow
        const batch = take()
        inFlight = batch
        if (batch.length === 0) {
          // Checked and cleared in one step: a write after this starts a new writer.
          running = false
          return
        }
        const exit = yield* Effect.exit(options.together(batch.map((w) => w.unit)))
        if (Exit.isSuccess(exit)) {
          batch.forEach((w, i) => Deferred.doneUnsafe(w.done, Exit.succeed(exit.value[i]!)))
          continue
        }
        const error = Exit.findErrorOption(exit)
        if (error._tag === "None") {
          // A defect or an interruption (no failure of type E in the cause, just checked):
          // the units of this write end with it.
          const cause = exit.cause as Cause.Cause<never>
          for (const w of batch) Deferred.doneUnsafe(w.done, Exit.failCause(cause))
          continue
        }
        yield* options.refused(error.value, batch.length)
        for (const w of batch) yield* alone(w)
      }
    }).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) return
          // Stopped early (its scope closed): nothing waiting will be written, and the write
          // in flight ends with the same cause.
          running = false
          for (const w of [...inFlight.splice(0), ...waiting.splice(0)]) Deferred.doneUnsafe(w.done, Exit.failCause(exit.cause))
        })
      )
    )

    /** When the write in flight ends: a writer fiber takes over what waits, or the combiner is idle. */
    const handOff = Effect.suspend(() => {
      if (waiting.length > 0) return Effect.asVoid(Effect.forkIn(writes, scope))
      running = false
      return Effect.void
    })

    const write = (unit: U): Effect.Effect<R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          if (running) {
            const w: Waiting<U, R> = { unit, done: Deferred.makeUnsafe<R>() }
            waiting.push(w)
            return restore(Deferred.await(w.done))
          }
          // Idle: this caller writes its unit itself, at once (no fork: an uncontended append
          // costs what it did). Units submitted meanwhile wait; when this write ends a writer
          // fiber takes them over, and if it was refused this caller writes its unit alone
          // without holding them up.
          running = true
          return Effect.gen(function*() {
            const exit = yield* Effect.ensuring(restore(Effect.exit(options.together([unit]))), handOff)
            if (Exit.isSuccess(exit)) return exit.value[0]!
            const error = Exit.findErrorOption(exit)
            if (error._tag === "None") return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
            yield* options.refused(error.value, 1)
            return yield* restore(options.alone(unit))
          })
        })
      )

    return { write }
  })
