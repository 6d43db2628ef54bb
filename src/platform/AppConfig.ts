/**
 * The service's own configuration, read once through Effect `Config` (environment
 * variables by default; tests set a `ConfigProvider`). Every key is in the README.
 */
import { Config, Context, Duration, Effect, Layer, Option } from "effect"

export interface AppConfigShape {
  readonly host: string
  readonly port: number
  /** Folder for the embedded PostgreSQL data (and other local state). */
  readonly dataDir: string
  /** Sign-In with Ethereum: the domain and URI the message must name, and the chain id. */
  readonly siweDomain: string
  readonly siweUri: string
  /** None: the primary chain's id. */
  readonly siweChainId: Option.Option<number>
  /** How long a sign-in nonce stays valid, and how old a signed message may be. */
  readonly nonceTtl: Duration.Duration
  readonly sessionTtl: Duration.Duration
  /** Where OTLP traces go (http/protobuf or http/json endpoint); none: tracing is off. */
  readonly otlpEndpoint: Option.Option<string>
  readonly serviceName: string
}

const siweHostOf = (host: string) =>
  host === "127.0.0.1" || host === "::1" || host === "0.0.0.0" || host === "::" || host === "localhost"
    ? "localhost"
    : host.includes(":") ? `[${host}]` : host

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("das/platform/AppConfig") {
  static readonly config = Config.all({
    host: Config.String("HOST").pipe(Config.withDefault("127.0.0.1")),
    port: Config.Port("PORT").pipe(Config.withDefault(8080)),
    dataDir: Config.String("DATA_DIR").pipe(Config.withDefault(".data")),
    siweDomain: Config.option(Config.String("SIWE_DOMAIN")),
    siweUri: Config.option(Config.String("SIWE_URI")),
    siweChainId: Config.option(Config.Int("SIWE_CHAIN_ID")),
    nonceTtl: Config.Duration("SIWE_NONCE_TTL").pipe(Config.withDefault(Duration.minutes(10))),
    sessionTtl: Config.Duration("SESSION_TTL").pipe(Config.withDefault(Duration.hours(12))),
    otlpEndpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT")),
    serviceName: Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("delegated-authority-service"))
  }).pipe(Config.map((c): AppConfigShape => {
    // Unless set, sign-in names where the service listens (`localhost` for a loopback or
    // every-interface HOST), so changing PORT does not break every sign-in.
    const authority = `${siweHostOf(c.host)}:${c.port}`
    return {
      ...c,
      siweDomain: Option.getOrElse(c.siweDomain, () => authority),
      siweUri: Option.getOrElse(c.siweUri, () => `http://${authority}`)
    }
  }))

  static readonly layer = Layer.effect(AppConfig, Effect.map(AppConfig.config, AppConfig.of))
}
