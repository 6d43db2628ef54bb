/**
 * Depeg drift alerts. A background fiber polls the price source every
 * `DEPEG_POLL_INTERVAL` for the configured stablecoins (`DEPEG_TOKENS`, pegged to
 * 1 USD). A token whose price moves more than `DEPEG_THRESHOLD_BPS` from the peg
 * starts an excursion: ONE alert. It ends when the price is back within
 * `DEPEG_RECOVERY_BPS` (default half the threshold, so a price hovering at the
 * threshold does not flap): ONE alert. Polls in between raise nothing.
 *
 * The excursion state lives in `depeg_state` and moves only by a conditional UPDATE
 * (`... WHERE in_excursion = false` / `= true`): the process whose UPDATE changes the
 * row raises the alert in the same transaction, so a restart resumes the state and
 * two processes polling the same database alert once.
 *
 * Alerts go to every signer that has an account (everyone who has signed in): a
 * depeg concerns whoever holds or delegates stablecoins, and the service does not
 * track balances to narrow that down.
 */
import { Config, Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import type { HttpClient } from "effect/http"
import { SqlClient } from "effect/sql"
import { cleanOutsideText } from "../domain/OutsideText.ts"
import { Notifications, type NotifyInput } from "./Notifications.ts"
import { PriceFeed } from "./PriceFeed.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"

export interface MonitoredToken {
  /** The price source's id (`usd-coin`). */
  readonly id: string
  /** What users read (`USDC`). */
  readonly symbol: string
}

/** `usd-coin:USDC,tether:USDT` → tokens; a bare id is its own symbol, uppercased. */
export const parseTokens = (text: string): ReadonlyArray<MonitoredToken> =>
  text.split(",").map((s) => s.trim()).filter((s) => s !== "").map((s) => {
    const [id, symbol] = s.split(":").map((x) => x.trim())
    return { id: id!, symbol: symbol !== undefined && symbol !== "" ? symbol : id!.toUpperCase() }
  })

export const DepegConfig = Config.all({
  tokens: Config.String("DEPEG_TOKENS").pipe(Config.withDefault("usd-coin:USDC,tether:USDT"), Config.map(parseTokens)),
  thresholdBps: Config.Int("DEPEG_THRESHOLD_BPS").pipe(Config.withDefault(50)),
  recoveryBps: Config.option(Config.Int("DEPEG_RECOVERY_BPS")),
  pollInterval: Config.Duration("DEPEG_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(60)))
})

export const PEG_USD = 1

/** Distance from the peg in basis points. */
export const deviationBps = (price: number): number => Math.abs(price - PEG_USD) * 10_000

export type Transition = "enter" | "exit" | "none"

/** Pure: what one observed price means for a token that is (or is not) in an excursion. */
export const transition = (inExcursion: boolean, price: number, thresholdBps: number, recoveryBps: number): Transition => {
  const bps = deviationBps(price)
  if (!inExcursion && bps > thresholdBps) return "enter"
  if (inExcursion && bps <= recoveryBps) return "exit"
  return "none"
}

const usd = (price: number) => `$${price.toFixed(4)}`

export const depegAlert = (
  token: MonitoredToken,
  price: number,
  thresholdBps: number,
  excursionId: string
): NotifyInput => ({
  tone: "danger",
  title: `${token.symbol} depeg`,
  body: `${token.symbol} is trading at ${usd(price)}, ${Math.round(deviationBps(price))} bps ${
    price < PEG_USD ? "below" : "above"
  } its $1.00 peg (alert threshold ${thresholdBps} bps).`,
  relatedType: "depeg",
  relatedId: excursionId,
  action: null
})

export const recoveryAlert = (token: MonitoredToken, price: number, recoveryBps: number, excursionId: string): NotifyInput => ({
  tone: "success",
  title: `${token.symbol} back on peg`,
  body: `${token.symbol} is trading at ${usd(price)}, within ${recoveryBps} bps of its $1.00 peg again.`,
  relatedType: "depeg",
  relatedId: excursionId,
  action: null
})

export interface Fired {
  readonly token: string
  readonly kind: "enter" | "exit"
  readonly excursionId: string
  readonly price: number
  readonly notified: number
}

export class DepegMonitor extends Context.Service<DepegMonitor, {
  /** One poll: read prices, move excursion states, raise the alerts this process won. */
  readonly check: Effect.Effect<ReadonlyArray<Fired>>
}>()("das/notifications/DepegMonitor") {
  /** The service; its polling fiber runs for the life of the layer. */
  static readonly layer = Layer.effect(
    DepegMonitor,
    Effect.gen(function*() {
      const config = yield* DepegConfig
      const sql = yield* SqlClient.SqlClient
      const feed = yield* PriceFeed
      const notifications = yield* Notifications
      const recoveryBps = Option.getOrElse(config.recoveryBps, () => Math.floor(config.thresholdBps / 2))
      const ids = config.tokens.map((t) => t.id)

      for (const t of config.tokens) {
        yield* sql`INSERT INTO depeg_state (token_id, symbol) VALUES (${t.id}, ${t.symbol}) ON CONFLICT DO NOTHING`.pipe(
          Effect.orDie
        )
      }

      const move = (token: MonitoredToken, kind: "enter" | "exit", price: number) =>
        sql.withTransaction(Effect.gen(function*() {
          const rows = kind === "enter"
            ? yield* sql<{ excursion_id: string }>`
                UPDATE depeg_state SET in_excursion = true, excursion_id = ${`dpg_${crypto.randomUUID()}`},
                  last_price = ${price}, changed_at = now()
                WHERE token_id = ${token.id} AND in_excursion = false RETURNING excursion_id`
            : yield* sql<{ excursion_id: string }>`
                UPDATE depeg_state SET in_excursion = false, last_price = ${price}, changed_at = now()
                WHERE token_id = ${token.id} AND in_excursion = true RETURNING excursion_id`
          // Another process moved it first: its alert stands, ours would be a duplicate.
          if (rows.length === 0) return Option.none<Fired>()
          const excursionId = rows[0]!.excursion_id
          const notified = yield* notifications.notifyAllSigners(
            kind === "enter"
              ? depegAlert(token, price, config.thresholdBps, excursionId)
              : recoveryAlert(token, price, recoveryBps, excursionId)
          )
          yield* Effect.logInfo(`depeg: ${token.symbol} ${kind === "enter" ? "left" : "is back within"} its band at ${price}`)
          return Option.some<Fired>({ token: token.id, kind, excursionId, price, notified })
        }))

      const check = Effect.gen(function*() {
        const prices = yield* feed.usdPrices(ids)
        const states = yield* sql<{ token_id: string; in_excursion: boolean }>`
          SELECT token_id, in_excursion FROM depeg_state WHERE token_id IN ${sql.in(ids)}`
        const fired: Array<Fired> = []
        for (const token of config.tokens) {
          const price = prices.get(token.id)
          if (price === undefined) {
            yield* Effect.logWarning(`depeg: the price source has no USD price for ${token.id}`)
            continue
          }
          const inExcursion = states.find((s) => s.token_id === token.id)?.in_excursion ?? false
          const t = transition(inExcursion, price, config.thresholdBps, recoveryBps)
          if (t === "none") continue
          const result = yield* move(token, t, price)
          if (Option.isSome(result)) fired.push(result.value)
        }
        return fired as ReadonlyArray<Fired>
      }).pipe(
        Effect.catchTag("SqlError", Effect.die),
        // The price source's words: on one line, bounded, no hidden character (src/domain/OutsideText.ts).
        Effect.catch((e) =>
          Effect.as(Effect.logWarning(`depeg: no prices this round (${cleanOutsideText(e.message, 200)})`), [] as ReadonlyArray<Fired>)
        ),
        Effect.withSpan("DepegMonitor.check")
      )

      yield* Effect.logInfo(
        `depeg monitor: ${config.tokens.map((t) => t.symbol).join(", ")} every ${Duration.format(config.pollInterval)}, ` +
          `alert beyond ${config.thresholdBps} bps, recovered within ${recoveryBps} bps`
      )
      // A failed round is logged (a database outage once: LoopHealth); the next round tries again.
      const health = makeLoopHealth("depeg monitor")
      yield* health.pass(check, [], "depeg: a round failed").pipe(
        Effect.repeat(Schedule.spaced(config.pollInterval)),
        Effect.forkScoped
      )
      return DepegMonitor.of({ check })
    })
  )
}

/**
 * The monitor with its price feed when `PRICE_SOURCE_URL` is set; nothing otherwise
 * (the default run reaches no internet service).
 */
export const DepegMonitorLive: Layer.Layer<
  never,
  Config.ConfigError,
  SqlClient.SqlClient | Notifications | HttpClient.HttpClient
> = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* Config.option(Config.String("PRICE_SOURCE_URL"))
    if (Option.isNone(url)) {
      yield* Effect.logInfo("depeg monitor: off (PRICE_SOURCE_URL is not set)")
      return Layer.empty
    }
    return Layer.empty.pipe(
      Layer.provide(DepegMonitor.layer),
      Layer.provide(PriceFeed.layer)
    )
  })
)
