/**
 * The contract's recommended polling of a relayed operation: every 4 seconds, at most 30 tries,
 * stop at `included` or `failed`; after the last try answer the last receipt seen, or fail if none
 * was ever obtained. A try that fails (network, 5xx, 429) counts as a try and polling goes on; a
 * 404 or 401 ends it at once (polling cannot fix those). Each try is a long-poll (`?wait=`, 30 s by
 * default): the service answers as soon as the operation settles.
 */
import { ApiError, PollFailed } from "./errors.ts"
import type { UserOpReceipt } from "./wire.ts"

export interface PollOptions {
  /** Between tries, ms (default 4,000). */
  readonly intervalMs?: number
  /** Tries in all (default 30). */
  readonly maxTries?: number
  /** How long each try may wait for the outcome, ms (default 30,000; 0: plain polling). */
  readonly waitMs?: number
  /** Called with every receipt obtained (progress display). */
  readonly onReceipt?: (receipt: UserOpReceipt) => void
}

export const isTerminal = (r: UserOpReceipt) => r.status === "included" || r.status === "failed"

export const pollReceipt = async (
  get: (userOpId: string, waitMs: number) => Promise<UserOpReceipt>,
  userOpId: string,
  options: PollOptions = {}
): Promise<UserOpReceipt> => {
  const interval = options.intervalMs ?? 4_000
  const maxTries = Math.max(1, options.maxTries ?? 30)
  const waitMs = Math.max(0, Math.floor(options.waitMs ?? 30_000))
  let last: UserOpReceipt | undefined
  let lastError: unknown
  for (let attempt = 1; attempt <= maxTries; attempt++) {
    const started = Date.now()
    try {
      last = await get(userOpId, waitMs)
      options.onReceipt?.(last)
      if (isTerminal(last)) return last
    } catch (e) {
      lastError = e
      if (e instanceof ApiError && (e.status === 404 || e.status === 401)) {
        throw new PollFailed(userOpId, attempt, `polling stopped: ${e.code}`, e)
      }
    }
    // The rest of the interval, after a try that did not wait it out (plain polling's pace).
    const left = interval - (Date.now() - started)
    if (attempt < maxTries && left > 0) await new Promise((r) => setTimeout(r, left))
  }
  if (last !== undefined) return last
  throw new PollFailed(userOpId, maxTries, `no receipt obtained in ${maxTries} tries`, lastError)
}
