/**
 * Whether a chain's node and bundler answer, kept per chain and read on every call to them
 * (issue 45 item 4). A monitor probes each chain with a cheap call of each kind; a part that
 * does not answer a probe, nor the one made at once to confirm it, is `down`, and from then
 * on every call to it fails AT ONCE (the request answers 503 with `Retry-After`) instead of
 * waiting out its timeout, until a probe finds it answering again. Readiness shows the same
 * state. A call in flight when a node hangs waits at most its chain's timeout (a 504).
 *
 * The confirming probe is there because a probe's timeout also fires when this process's own
 * event loop was held up past it (a loaded machine): the fresh probe made right after then
 * answers, and the chain is not taken for down on one late timer. A probe whose timer fired
 * well after it was due (the process itself stalled) counts for nothing either way.
 */
import { Config, Duration, Effect, Option, Schedule } from "effect"
import { BaseError } from "viem"

/** A chain's calls failed fast: the part named was found not answering and is not probed back yet. */
export class ChainDegradedError extends BaseError {
  constructor(chainId: number, part: "node" | "bundler") {
    super(`The ${part} of chain ${chainId} is not answering (degraded); try again shortly`, { name: "ChainDegradedError" })
  }
}

/** A chain call that did not answer within its chain's timeout (retries included). */
export class ChainCallTimeoutError extends BaseError {
  constructor(chainId: number, method: string, timeout: Duration.Duration) {
    super(`The node of chain ${chainId} did not answer ${method} within ${Duration.format(timeout)}`, {
      name: "ChainCallTimeoutError"
    })
  }
}

/** Whether `error` (or a cause of it) is a timeout of a chain call: ours or viem's own per attempt. */
export const isChainTimeout = (error: unknown): boolean =>
  error instanceof BaseError &&
  error.walk((e) => e instanceof ChainCallTimeoutError || (e instanceof BaseError && e.name === "TimeoutError")) !== null

export const isChainDegraded = (error: unknown): boolean =>
  error instanceof BaseError && error.walk((e) => e instanceof ChainDegradedError) !== null

export type Part = "rpc" | "bundler"

/** The state of one chain's two parts, read synchronously on the call path. */
export interface ChainHealth {
  readonly chainId: number
  isDown(part: Part): boolean
  /** When the part was found down (ms since the epoch), undefined while it answers. */
  downSince(part: Part): number | undefined
  set(part: Part, up: boolean): void
}

export const makeChainHealth = (chainId: number): ChainHealth => {
  const since: Record<Part, number | undefined> = { rpc: undefined, bundler: undefined }
  return {
    chainId,
    isDown: (part) => since[part] !== undefined,
    downSince: (part) => since[part],
    set: (part, up) => {
      if (up) since[part] = undefined
      else since[part] ??= Date.now()
    }
  }
}

/** A chain's timeouts: the chain's own key, else the key for every chain, else the default. */
export interface ChainTimeouts {
  /** One JSON-RPC call to the node, its retries included. */
  readonly rpc: Duration.Duration
  /** One bundler call (an attempt that timed out is not retried). */
  readonly bundler: Duration.Duration
}

const durationOf = (chainKey: string, shared: Config.Config<Duration.Duration>) =>
  Config.Duration(chainKey).pipe(
    Config.option,
    Config.flatMap((own) => Option.isSome(own) ? Config.succeed(own.value) : shared)
  )

/** `CHAIN_<id>_RPC_TIMEOUT` / `CHAIN_RPC_TIMEOUT` (10 s), `CHAIN_<id>_BUNDLER_TIMEOUT` / `BUNDLER_TIMEOUT` (10 s). */
export const chainTimeouts = (chainId: number): Config.Config<ChainTimeouts> =>
  Config.all({
    rpc: durationOf(`CHAIN_${chainId}_RPC_TIMEOUT`, Config.Duration("CHAIN_RPC_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10)))),
    bundler: durationOf(`CHAIN_${chainId}_BUNDLER_TIMEOUT`, Config.Duration("BUNDLER_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))))
  })

/**
 * How often each chain is probed (`CHAIN_PROBE_INTERVAL`, 2 s), and how long a probe waits
 * (`CHAIN_PROBE_TIMEOUT`, 5 s: a cheap call that a node on a loaded machine still answers in
 * time; a chain taken for down wrongly would answer 503 to every request).
 */
export const ProbeConfig = Config.all({
  interval: Config.Duration("CHAIN_PROBE_INTERVAL").pipe(Config.withDefault(Duration.seconds(2))),
  timeout: Config.Duration("CHAIN_PROBE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5)))
})

/** A probe's timer firing this much later than due: this process was held up, not (only) the chain. */
const STALL_MS = 500

/**
 * One probe through `call` (a path that is never failed fast): `true` answered within the
 * timeout; `false` not, and a second probe made at once did not either; `undefined` when no
 * probe could tell (see the module's note): each timed out on a timer that fired late, which
 * says this process was held up (a loaded machine), not that the chain hangs. The state is
 * then left as it was.
 */
const answers = (call: Effect.Effect<unknown, unknown>, timeout: Duration.Duration) => {
  const ms = Duration.toMillis(timeout)
  const once = Effect.suspend(() => {
    const due = Date.now() + ms
    return call.pipe(
      Effect.map((): "up" | "down" | "stalled" => "up"),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.sync(() => Date.now() - due > STALL_MS ? "stalled" as const : "down" as const)
      }),
      Effect.orElseSucceed(() => "down" as const)
    )
  })
  // Up to three probes in a row: an answer, or two that found no answer in time (a stalled one tells nothing).
  const decide = (left: number, misses: number): Effect.Effect<boolean | undefined> =>
    left === 0
      ? Effect.succeed(undefined)
      : Effect.flatMap(once, (r) =>
        r === "up" ? Effect.succeed(true) : r === "down" && misses === 1 ? Effect.succeed(false) : decide(left - 1, misses + (r === "down" ? 1 : 0)))
  return decide(3, 0)
}

/**
 * Probes one chain for as long as the scope lasts: every `interval` while it answers, every
 * half of it while a part is down (so it is served again soon after it is back). A part's
 * change is logged once each way.
 */
export const monitor = (
  health: ChainHealth,
  name: string,
  probes: { readonly rpc: Effect.Effect<unknown, unknown>; readonly bundler: Effect.Effect<unknown, unknown> },
  config: { readonly interval: Duration.Duration; readonly timeout: Duration.Duration }
) => {
  const what: Record<Part, string> = { rpc: "node (RPC)", bundler: "bundler" }
  const check = (part: Part) =>
    Effect.flatMap(answers(probes[part], config.timeout), (up) => {
      if (up === undefined) return Effect.void
      const was = health.downSince(part)
      health.set(part, up)
      if (!up && was === undefined) {
        return Effect.logWarning(
          `chain ${health.chainId} (${name}): its ${what[part]} did not answer a probe twice in ${Duration.format(config.timeout)}; ` +
            `its calls fail at once (503) until it answers again`
        )
      }
      if (up && was !== undefined) {
        return Effect.logInfo(`chain ${health.chainId} (${name}): its ${what[part]} answers again (after ${Date.now() - was} ms)`)
      }
      return Effect.void
    })
  const pass = Effect.all([check("rpc"), check("bundler")], { concurrency: 2, discard: true })
  const pause = Effect.suspend(() =>
    Effect.sleep(
      health.isDown("rpc") || health.isDown("bundler") ? Duration.divideUnsafe(config.interval, 2) : config.interval
    )
  )
  return pass.pipe(Effect.andThen(pause), Effect.repeat(Schedule.forever), Effect.asVoid)
}
