/**
 * The contract's recommended polling of a relayed operation: every 4 seconds, at most
 * 30 tries, stop at `included` or `failed`; after the last try answer the last receipt
 * seen, or fail if none was ever obtained. A try that fails (network, 5xx, 429) counts as a
 * try and polling goes on; a 404 or 401 ends it at once (polling cannot fix those).
 *
 * Each try is a long-poll (`?wait=`, 30 s by default; docs/relay.md): the service answers as
 * soon as the operation settles, so the outcome arrives when it happens, not at the next
 * tick. A try that comes back sooner without an outcome (a service that does not wait, or a
 * failure) is followed by the rest of the interval, as plain polling.
 */
import { Clock, Data, Duration, Effect } from "effect"
import type { UserOpReceipt } from "../domain/Operations.ts"
import type { ApiClient } from "./Client.ts"

export interface PollOptions {
  /** Between tries (default 4 s). */
  readonly interval?: Duration.Input
  /** Tries in all (default 30). */
  readonly maxTries?: number
  /** How long each try may wait for the outcome (default 30 s; `0`: plain polling). */
  readonly wait?: Duration.Input
  /** Called with every receipt obtained (progress display). */
  readonly onReceipt?: (receipt: UserOpReceipt) => void
}

/** No receipt was ever obtained (every try failed), or the operation is not the caller's. */
export class PollFailed extends Data.TaggedError("PollFailed")<{
  readonly userOpId: string
  readonly tries: number
  readonly message: string
  readonly lastError?: unknown
}> {}

const isTerminal = (r: UserOpReceipt) => r.status === "included" || r.status === "failed"

export const pollUserOp = (client: ApiClient, userOpId: string, options: PollOptions = {}) =>
  Effect.gen(function*() {
    const interval = Duration.fromInputUnsafe(options.interval ?? Duration.seconds(4))
    const maxTries = Math.max(1, options.maxTries ?? 30)
    const waitMs = Math.floor(Duration.toMillis(Duration.fromInputUnsafe(options.wait ?? Duration.seconds(30))))
    const query = waitMs > 0 ? { wait: `${waitMs}ms` } : {}
    let last: UserOpReceipt | undefined
    let lastError: unknown
    for (let attempt = 1; attempt <= maxTries; attempt++) {
      const started = yield* Clock.currentTimeMillis
      const result = yield* Effect.result(client.userops.get({ params: { userOpId }, query }))
      if (result._tag === "Success") {
        last = result.success
        options.onReceipt?.(last)
        if (isTerminal(last)) return last
      } else {
        lastError = result.failure
        const tag = (result.failure as { readonly _tag?: string })._tag
        if (tag === "NotFound" || tag === "Unauthorized") {
          return yield* new PollFailed({ userOpId, tries: attempt, message: `polling stopped: ${tag}`, lastError })
        }
      }
      // The rest of the interval, after a try that did not wait it out (plain polling's pace).
      const left = Duration.toMillis(interval) - ((yield* Clock.currentTimeMillis) - started)
      if (attempt < maxTries && left > 0) yield* Effect.sleep(Duration.millis(left))
    }
    if (last !== undefined) return last
    return yield* new PollFailed({
      userOpId,
      tries: maxTries,
      message: `no receipt obtained in ${maxTries} tries`,
      lastError
    })
  })
