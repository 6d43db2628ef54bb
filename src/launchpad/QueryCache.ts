/**
 * A small per-key cache for public upstream reads:
 * - fresh answers are reused for `ttl`;
 * - single flight: however many callers ask for a key at once, one fetch runs, and it
 *   runs in the cache's own scope, so a caller that goes away does not cancel it for the rest;
 * - stale-on-error: when a fetch fails with an error `serveStaleOn` accepts, the last good
 *   answer is served with its original `asOf`; the error surfaces only when there is none;
 * - at most `maxEntries` keys are kept (least recently used goes first).
 */
import { Clock, Deferred, Duration, Effect, Exit, Scope } from "effect"

export interface Cached<A> {
  readonly value: A
  /** When the upstream produced this answer (epoch ms). */
  readonly asOf: number
  /** True when served in place of a failed refresh. */
  readonly stale: boolean
}

export interface QueryCache<A, E> {
  get(key: string, fetch: Effect.Effect<A, E>): Effect.Effect<Cached<A>, E>
  /** The key's answer when it is fresh (within the TTL), without fetching: the hot path's shortcut. */
  peek(key: string): Effect.Effect<Cached<A> | undefined>
}

interface Entry<A> {
  readonly value: A
  readonly asOf: number
}

export const makeQueryCache = <A, E>(options: {
  readonly ttl: Duration.Input
  readonly maxEntries: number
  readonly serveStaleOn: (e: E) => boolean
}): Effect.Effect<QueryCache<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const ttlMs = Duration.toMillis(Duration.fromInputUnsafe(options.ttl))
    const entries = new Map<string, Entry<A>>()
    const inflight = new Map<string, Deferred.Deferred<Entry<A>, E>>()

    const remember = (key: string, entry: Entry<A>) => {
      entries.delete(key)
      entries.set(key, entry)
      while (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!)
    }

    /** Runs the fetch in the cache's scope and settles `deferred` with its outcome, whatever it is. */
    const run = (key: string, deferred: Deferred.Deferred<Entry<A>, E>, fetch: Effect.Effect<A, E>) =>
      fetch.pipe(
        Effect.flatMap((value) => Effect.map(Clock.currentTimeMillis, (asOf): Entry<A> => ({ value, asOf }))),
        Effect.tap((entry) => Effect.sync(() => remember(key, entry))),
        // Runs on success, failure and interruption alike, so waiters are never left hanging.
        Effect.onExit((exit) =>
          Effect.suspend(() => {
            inflight.delete(key)
            return Deferred.done(deferred, exit)
          })
        ),
        Effect.forkIn(scope)
      )

    const fresh = (key: string, now: number): Cached<A> | undefined => {
      const hit = entries.get(key)
      if (hit === undefined || now - hit.asOf >= ttlMs) return undefined
      remember(key, hit)
      return { value: hit.value, asOf: hit.asOf, stale: false }
    }

    const peek = (key: string) => Effect.map(Clock.currentTimeMillis, (now) => fresh(key, now))

    const get = (key: string, fetch: Effect.Effect<A, E>): Effect.Effect<Cached<A>, E> =>
      Effect.gen(function*() {
        const hit = fresh(key, yield* Clock.currentTimeMillis)
        if (hit !== undefined) return hit
        // Check-and-register in one synchronous step, so two callers can never both start a fetch.
        const [deferred, owner] = yield* Effect.sync(() => {
          const running = inflight.get(key)
          if (running !== undefined) return [running, false] as const
          const created = Deferred.makeUnsafe<Entry<A>, E>()
          inflight.set(key, created)
          return [created, true] as const
        })
        if (owner) yield* run(key, deferred, fetch)
        const exit = yield* Effect.exit(Deferred.await(deferred))
        if (Exit.isSuccess(exit)) return { value: exit.value.value, asOf: exit.value.asOf, stale: false }
        const error = Exit.findErrorOption(exit)
        const last = entries.get(key)
        if (error._tag === "Some" && options.serveStaleOn(error.value) && last !== undefined) {
          yield* Effect.logWarning("launchpad: upstream failed, serving the last good answer", {
            key,
            asOf: new Date(last.asOf).toISOString()
          })
          return { value: last.value, asOf: last.asOf, stale: true }
        }
        return yield* Effect.failCause(exit.cause)
      })

    return { get, peek }
  })
