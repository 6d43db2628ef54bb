/**
 * Single flight: identical calls at once are one run; its outcome (a failure too) reaches
 * every waiter; a run whose caller went away does not take its waiters with it; nothing is
 * kept once a run ends.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { makeSingleFlight } from "../../src/platform/SingleFlight.ts"

/** Work that counts its runs and waits at a gate until the test opens it; `end` gives its outcome. */
const gated = <A, E>(end: (run: number) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const count = { runs: 0 }
    const work = Effect.suspend(() => {
      const run = ++count.runs
      return Effect.andThen(Deferred.await(gate), end(run))
    })
    return { count, work, open: Deferred.succeed(gate, undefined) }
  })

describe("single flight", () => {
  it.effect("50 calls at once run once and all get its answer; the next call runs again", () =>
    Effect.gen(function*() {
      const once = makeSingleFlight()
      const { count, work, open } = yield* gated((run) => Effect.succeed(`answer ${run}`))
      const fibers = yield* Effect.forEach(Array.from({ length: 50 }), () => Effect.forkChild(once("k", work)))
      yield* Effect.yieldNow
      yield* open
      assert.deepStrictEqual([...new Set(yield* Fiber.joinAll(fibers))], ["answer 1"])
      assert.strictEqual(count.runs, 1)
      assert.strictEqual(yield* once("k", work), "answer 2", "nothing kept once the run ended")
      assert.strictEqual(yield* once("other", work), "answer 3", "keys are apart")
    }))

  it.effect("a failure reaches every waiter, from one run", () =>
    Effect.gen(function*() {
      const once = makeSingleFlight()
      const { count, work, open } = yield* gated(() => Effect.fail("declined"))
      const fibers = yield* Effect.forEach(Array.from({ length: 10 }), () => Effect.forkChild(Effect.flip(once("k", work))))
      yield* Effect.yieldNow
      yield* open
      assert.deepStrictEqual([...new Set(yield* Fiber.joinAll(fibers))], ["declined"])
      assert.strictEqual(count.runs, 1)
    }))

  it.effect("the first caller interrupted: its waiters run it again themselves, once", () =>
    Effect.gen(function*() {
      const once = makeSingleFlight()
      const { count, work, open } = yield* gated(() => Effect.succeed("done"))
      const first = yield* Effect.forkChild(once("k", work))
      yield* Effect.yieldNow
      const waiters = yield* Effect.forEach(Array.from({ length: 5 }), () => Effect.forkChild(once("k", work)))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(first)
      yield* Effect.yieldNow
      yield* open
      assert.deepStrictEqual(yield* Fiber.joinAll(waiters), ["done", "done", "done", "done", "done"])
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(first)))
      assert.strictEqual(count.runs, 2, "the interrupted run, then one run for all the waiters")
    }))
})
