/**
 * Group commit per key (docs/audit-log.md, "Group commit"): items submitted for one key
 * while a write for that key is in flight wait in that key's FIFO queue; when the write
 * ends, the waiting items (up to `maxBatch`) go out together in ONE write. Keys are
 * independent: each has its own queue and its own writer, so one key never waits on
 * another.
 *
 * A submit that finds its key idle writes its item itself, in its own fiber, as a
 * one-item write (the uncontended case pays nothing for the queue). Items submitted for
 * the key meanwhile wait in its queue; when that write ends, a writer fiber of the
 * queue's own (forked into the scope the queue was made in) takes them over, batch after
 * batch, and ends when the key's queue is empty. A queued caller only waits for its
 * item's result, so:
 *
 * - **Interrupting a queued caller** before its item was taken into a write removes the
 *   item: it is never written (as an append interrupted before its statement was sent).
 *   Once taken, the write goes on without the caller (as a statement already sent does):
 *   the item is written exactly once and the caller just does not see the result. So an
 *   item is never written twice, and never dropped once its write has started. The
 *   caller that writes its own item (the key was idle) is interrupted as any statement
 *   is; the queue behind it is handed to a writer fiber all the same.
 * - **Each item gets its own result**: `write` answers one `Exit` per item, in order; a
 *   failure of the whole write (a defect) fails every item of that batch with its cause.
 * - **Closing the scope** interrupts the writers; items still waiting are interrupted
 *   (never written), items in a write in flight end with the write's interruption.
 */
import { Deferred, Effect, Exit, type Scope } from "effect"

export interface AppendQueue<K, I, A, E> {
  /** Queues `item` behind the key's write in flight (or writes it now) and waits for its result. */
  readonly submit: (key: K, item: I) => Effect.Effect<A, E>
}

interface Pending<I, A, E> {
  readonly item: I
  readonly done: Deferred.Deferred<A, E>
  /** Taken into a write: from then on it is written whatever its caller does. */
  taken: boolean
  /** Its caller was interrupted before it was taken: skipped, never written. */
  cancelled: boolean
}

interface Lane<I, A, E> {
  readonly waiting: Array<Pending<I, A, E>>
}

export const make = <K, I, A, E>(options: {
  /** Most items per write. */
  readonly maxBatch: number
  /** Writes the items of one key, in order, and answers one `Exit` per item, in order. */
  readonly write: (key: K, items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<A, E>>>
  /** Writes one item on its own (what a caller that finds its key idle runs). */
  readonly writeOne: (key: K, item: I) => Effect.Effect<A, E>
}): Effect.Effect<AppendQueue<K, I, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const lanes = new Map<K, Lane<I, A, E>>()

    /** The next batch: up to `maxBatch` waiting items, oldest first, skipping cancelled ones. */
    const take = (lane: Lane<I, A, E>): Array<Pending<I, A, E>> => {
      let n = 0
      const batch: Array<Pending<I, A, E>> = []
      while (n < lane.waiting.length && batch.length < options.maxBatch) {
        const p = lane.waiting[n++]!
        if (p.cancelled) continue
        p.taken = true
        batch.push(p)
      }
      lane.waiting.splice(0, n)
      return batch
    }

    const writeBatch = (key: K, batch: ReadonlyArray<Pending<I, A, E>>) =>
      options.write(key, batch.map((p) => p.item)).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            batch.forEach((p, i) => {
              const result: Exit.Exit<A, E> = Exit.isSuccess(exit)
                ? exit.value[i] ?? Exit.die(new Error(`AppendQueue: the write answered no result for item ${i}`))
                : Exit.failCause(exit.cause)
              Deferred.doneUnsafe(p.done, result)
            })
          })
        )
      )

    const drain = (key: K, lane: Lane<I, A, E>) =>
      Effect.gen(function*() {
        while (true) {
          // Let every caller already scheduled (those a finished write just answered,
          // most of all) queue its next item before the batch is cut.
          yield* Effect.yieldNow
          const batch = take(lane)
          if (batch.length === 0) {
            // Checked and removed in one step: a submit after this starts a new writer.
            lanes.delete(key)
            return
          }
          yield* writeBatch(key, batch)
        }
      }).pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            if (Exit.isSuccess(exit)) return
            // The writer stopped early (interrupted with its scope, or a defect): nothing
            // waiting will be written, so every waiting caller is told so.
            if (lanes.get(key) === lane) lanes.delete(key)
            for (const p of lane.waiting.splice(0)) Deferred.doneUnsafe(p.done, Exit.failCause(exit.cause))
          })
        )
      )

    const submit = (key: K, item: I): Effect.Effect<A, E> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          const busy = lanes.get(key)
          if (busy === undefined) {
            // The key is idle: this caller writes its item itself, at once (no queue, no
            // fork: the uncontended append costs what it did before). Items submitted
            // meanwhile queue behind it; a writer fiber takes them over when it ends.
            const lane: Lane<I, A, E> = { waiting: [] }
            lanes.set(key, lane)
            return Effect.ensuring(
              restore(options.writeOne(key, item)),
              Effect.suspend(() => {
                if (lane.waiting.length > 0) return Effect.asVoid(Effect.forkIn(drain(key, lane), scope))
                lanes.delete(key)
                return Effect.void
              })
            )
          }
          const pending: Pending<I, A, E> = { item, done: Deferred.makeUnsafe<A, E>(), taken: false, cancelled: false }
          busy.waiting.push(pending)
          return restore(Deferred.await(pending.done)).pipe(
            Effect.onInterrupt(() =>
              Effect.sync(() => {
                if (!pending.taken) pending.cancelled = true
              })
            )
          )
        })
      )

    return { submit }
  })
