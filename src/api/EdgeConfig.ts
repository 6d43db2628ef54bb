/**
 * The HTTP edge's limits, read once through Effect `Config` (README "Configuration",
 * docs/decisions.md "The HTTP edge"). Every limit answers with the envelope.
 */
import { Config, Context, Duration, Effect, Layer, type LogLevel } from "effect"
import { logLevelConfig } from "../platform/Logging.ts"
import type { RateRule } from "../platform/RateLimit.ts"

export interface EdgeConfigShape {
  /** Largest request body read (bytes); larger: 413, enforced while the body streams in. */
  readonly maxBodyBytes: number
  /** Largest request line + headers Node parses (bytes); larger: 431. */
  readonly maxHeaderBytes: number
  /** Longest URL (path + query) accepted; longer: 414. */
  readonly maxUrlLength: number
  /** Per client IP: `POST /auth/nonce`. */
  readonly nonceRate: RateRule
  /** Per client IP: `POST /auth/session`. */
  readonly sessionRate: RateRule
  /** Per signer: every build endpoint and `POST /delegations/{id}/actions`. */
  readonly buildRate: RateRule
  /** `Retry-After` sent with a 503 while the database is unreachable. */
  readonly unavailableRetryAfter: Duration.Duration
  /** The level of a request's access line (a failure's is always `Error`); below `LOG_LEVEL`: not written. */
  readonly accessLogLevel: LogLevel.LogLevel
}

const perMinute = (key: string, fallback: number) =>
  Config.Int(key).pipe(
    Config.withDefault(fallback),
    Config.map((limit): RateRule => ({ limit: Math.max(0, limit), window: Duration.minutes(1) }))
  )

export class EdgeConfig extends Context.Service<EdgeConfig, EdgeConfigShape>()("das/api/EdgeConfig") {
  static readonly config = Config.all({
    maxBodyBytes: Config.Int("HTTP_MAX_BODY_BYTES").pipe(Config.withDefault(1024 * 1024)),
    maxHeaderBytes: Config.Int("HTTP_MAX_HEADER_BYTES").pipe(Config.withDefault(16 * 1024)),
    maxUrlLength: Config.Int("HTTP_MAX_URL_LENGTH").pipe(Config.withDefault(8 * 1024)),
    nonceRate: perMinute("RATE_LIMIT_NONCE_PER_MINUTE", 30),
    sessionRate: perMinute("RATE_LIMIT_SESSION_PER_MINUTE", 30),
    buildRate: perMinute("RATE_LIMIT_BUILDS_PER_MINUTE", 120),
    unavailableRetryAfter: Config.Duration("DATABASE_RETRY_AFTER").pipe(Config.withDefault(Duration.seconds(5))),
    accessLogLevel: logLevelConfig("LOG_ACCESS_LEVEL", "Info")
  })

  static readonly layer = Layer.effect(EdgeConfig, Effect.map(EdgeConfig.config, EdgeConfig.of))
}
