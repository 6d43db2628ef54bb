import { Duration, Effect, Schedule } from "effect"

/** Polls `check` until it answers something (not `undefined`), dying after `seconds` with `what` not yet true. */
export const waitFor = <A>(what: string, check: Effect.Effect<A | undefined>, seconds = 30) =>
  check.pipe(
    Effect.flatMap((a) => (a === undefined ? Effect.fail(`not yet: ${what}`) : Effect.succeed(a))),
    Effect.retry(Schedule.spaced(Duration.millis(100))),
    Effect.timeout(Duration.seconds(seconds)),
    Effect.orDie
  )
