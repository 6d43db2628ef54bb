/**
 * A wake-up for one waiting fiber: `fire` wakes the fiber blocked in `wait`, or, if none is
 * waiting, makes the next `wait` return at once (a wake-up that arrives mid-pass is not lost).
 * Several fires before a wait count as one.
 */
import { Effect } from "effect"

export interface Signal {
  readonly fire: () => void
  readonly wait: Effect.Effect<void>
}

export const makeSignal = (): Signal => {
  let fired = false
  let resume: (() => void) | undefined
  return {
    fire: () => {
      const r = resume
      if (r === undefined) {
        fired = true
        return
      }
      resume = undefined
      r()
    },
    wait: Effect.callback<void>((done) => {
      if (fired) {
        fired = false
        return done(Effect.void)
      }
      resume = () => done(Effect.void)
      return Effect.sync(() => {
        resume = undefined
      })
    })
  }
}
