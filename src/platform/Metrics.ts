/**
 * Metrics in the Prometheus text format (prom-client), served on an internal listener of their
 * own (docs/operations.md, "Metrics"): `METRICS_HOST`:`METRICS_PORT`, by default
 * 127.0.0.1:9464, never on the API's port, so nothing outside the operator's network can read
 * them, and no authentication is needed on it.
 *
 * `Metrics` is what features register into, each in its own layer:
 * - `counter` / `histogram`: figures this process counts as things happen (requests, relay
 *   outcomes, webhook attempts, rate-limit refusals);
 * - `gaugeOf`: figures read when Prometheus scrapes (queue depths, follower lag, anchor age),
 *   by an Effect run with the registering feature's services. Those read from the database are
 *   the same on every process: aggregate them with `max`, not `sum`.
 *
 * Labels are bounded sets (route templates, statuses, outcome names), never a user's address,
 * account, key or IP: the figures are aggregates and hold no per-user data.
 */
import { Config, Context, Duration, Effect, Layer, Option } from "effect"
import { createServer } from "node:http"
import * as Prom from "prom-client"
import { httpOrigin, listenScoped } from "./FreePort.ts"

/** One reading of a gauge at scrape time. */
export interface Reading<L extends string> {
  readonly labels?: Partial<Record<L, string | number>>
  readonly value: number
}

export interface MetricSpec<L extends string> {
  /** `das_…`, in Prometheus conventions (`_total` for counters, base units: seconds, bytes). */
  readonly name: string
  readonly help: string
  readonly labelNames?: ReadonlyArray<L>
}

export interface MetricsShape {
  readonly registry: Prom.Registry
  readonly counter: <L extends string = never>(spec: MetricSpec<L>) => Prom.Counter<L>
  readonly histogram: <L extends string = never>(
    spec: MetricSpec<L> & { readonly buckets?: ReadonlyArray<number> }
  ) => Prom.Histogram<L>
  /**
   * A histogram for the hot paths: each label set is bound once (`bind`), and observing is then
   * a bucket search and three additions. prom-client's own `labels(...).observe` validates and
   * hashes the labels again on every call. Scraped as the same text as a prom-client histogram.
   */
  readonly boundHistogram: <L extends string>(
    spec: MetricSpec<L> & { readonly buckets: ReadonlyArray<number> }
  ) => BoundHistogram<L>
  /**
   * A gauge whose readings `read` produces at each scrape (with the caller's services). A read
   * that fails or takes longer than 2 s leaves the gauge without a value for that scrape.
   */
  readonly gaugeOf: <L extends string = never, E = never, R = never>(
    spec: MetricSpec<L>,
    read: Effect.Effect<number | ReadonlyArray<Reading<L>>, E, R>
  ) => Effect.Effect<void, never, R>
  /** The text Prometheus scrapes. */
  readonly scrape: Effect.Effect<string>
}

const READ_TIMEOUT = Duration.seconds(2)

/** A histogram whose label sets are bound once (`MetricsShape.boundHistogram`). */
export interface BoundHistogram<L extends string> {
  /** The series of these label values (the same one for the same values). */
  readonly bind: (labels: Readonly<Record<L, string>>) => { readonly observe: (value: number) => void }
}

interface BoundSeries {
  readonly labels: Readonly<Record<string, string>>
  /** Observations per bucket (not cumulative): index i counts values ≤ bound i above bound i-1. */
  readonly counts: Float64Array
  sum: number
  count: number
}

/**
 * The registry's view of a bound histogram: `get` answers what prom-client's `Histogram`
 * answers for its text exposition (cumulative `_bucket` per `le`, `+Inf`, `_sum`, `_count`,
 * the series' labels after `le`), so the scrape reads the same.
 */
class BoundHistogramMetric<L extends string> implements BoundHistogram<L> {
  readonly type = "histogram"
  readonly aggregator = "sum"
  private readonly series = new Map<string, BoundSeries>()

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: ReadonlyArray<L>,
    private readonly bounds: ReadonlyArray<number>
  ) {}

  bind = (labels: Readonly<Record<L, string>>) => {
    const key = this.labelNames.map((n) => labels[n]).join("\u0000")
    let s = this.series.get(key)
    if (s === undefined) {
      const own: Record<string, string> = {}
      for (const n of this.labelNames) own[n] = labels[n]
      this.series.set(key, s = { labels: own, counts: new Float64Array(this.bounds.length), sum: 0, count: 0 })
    }
    const series = s
    const bounds = this.bounds
    return {
      observe: (value: number) => {
        // As prom-client: the first bound the value does not exceed; above them all, only `+Inf`.
        for (let i = 0; i < bounds.length; i++) {
          if (value <= bounds[i]!) {
            series.counts[i]! += 1
            break
          }
        }
        series.sum += value
        series.count += 1
      }
    }
  }

  get() {
    const values: Array<{ labels: Record<string, string | number>; sharedLabels: Readonly<Record<string, string>>; value: number; metricName: string }> = []
    for (const s of this.series.values()) {
      let cumulative = 0
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i]!
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: s.labels, value: cumulative, metricName: `${this.name}_bucket` })
      }
      values.push({ labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket` })
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` })
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` })
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator })
  }

  reset() {
    for (const s of this.series.values()) {
      s.counts.fill(0)
      s.sum = 0
      s.count = 0
    }
  }
}

export class Metrics extends Context.Service<Metrics, MetricsShape>()("das/platform/Metrics") {
  static readonly make: Effect.Effect<MetricsShape> = Effect.sync(() => {
    const registry = new Prom.Registry()
    Prom.collectDefaultMetrics({ register: registry })
    // The latest registration of a name wins (a layer built again, in tests).
    const fresh = (name: string) => registry.removeSingleMetric(name)

    const counter = <L extends string = never>(spec: MetricSpec<L>) => {
      fresh(spec.name)
      return new Prom.Counter<L>({
        name: spec.name,
        help: spec.help,
        labelNames: (spec.labelNames ?? []) as ReadonlyArray<L>,
        registers: [registry]
      })
    }

    const histogram = <L extends string = never>(spec: MetricSpec<L> & { readonly buckets?: ReadonlyArray<number> }) => {
      fresh(spec.name)
      return new Prom.Histogram<L>({
        name: spec.name,
        help: spec.help,
        labelNames: (spec.labelNames ?? []) as ReadonlyArray<L>,
        ...(spec.buckets === undefined ? {} : { buckets: [...spec.buckets] }),
        registers: [registry]
      })
    }

    const boundHistogram = <L extends string>(spec: MetricSpec<L> & { readonly buckets: ReadonlyArray<number> }) => {
      fresh(spec.name)
      const metric = new BoundHistogramMetric<L>(spec.name, spec.help, spec.labelNames ?? [], [...spec.buckets].sort((a, b) => a - b))
      registry.registerMetric(metric as unknown as Prom.Metric)
      return metric as BoundHistogram<L>
    }

    const gaugeOf = <L extends string = never, E = never, R = never>(
      spec: MetricSpec<L>,
      read: Effect.Effect<number | ReadonlyArray<Reading<L>>, E, R>
    ) =>
      Effect.gen(function*() {
        const run = Effect.runPromiseWith(yield* Effect.context<R>())
        const reading = read.pipe(
          Effect.timeoutOption(READ_TIMEOUT),
          Effect.catchCause((cause) =>
            Effect.as(Effect.logDebug(`metrics: ${spec.name} could not be read`, cause), Option.none())
          )
        )
        fresh(spec.name)
        new Prom.Gauge<L>({
          name: spec.name,
          help: spec.help,
          labelNames: (spec.labelNames ?? []) as ReadonlyArray<L>,
          registers: [registry],
          async collect() {
            const value = await run(reading)
            this.reset()
            if (Option.isNone(value)) return
            if (typeof value.value === "number") return void this.set(value.value)
            for (const r of value.value) {
              if (r.labels === undefined) this.set(r.value)
              else this.set(r.labels as Partial<Record<L, string | number>>, r.value)
            }
          }
        })
      })

    return {
      registry,
      counter,
      histogram,
      boundHistogram,
      gaugeOf,
      scrape: Effect.promise(() => registry.metrics())
    }
  })

  static readonly layer = Layer.effect(Metrics, Effect.map(Metrics.make, Metrics.of))
}

/**
 * Registers a feature's metrics when the app has a `Metrics` (a layer composed without it,
 * in unit tests, registers nothing).
 */
export const withMetrics = <R>(register: (metrics: MetricsShape) => Effect.Effect<void, never, R>) =>
  Effect.flatMap(Effect.serviceOption(Metrics), (metrics) => (Option.isSome(metrics) ? register(metrics.value) : Effect.void))

/**
 * Where the metrics listener is: `METRICS_PORT` (`0`: a free port; `off`: none; unset: 9464) on
 * `METRICS_HOST`.
 */
export const MetricsConfig = Config.all({
  host: Config.String("METRICS_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.option(Config.String("METRICS_PORT"))
})

const DEFAULT_METRICS_PORT = 9464

export class MetricsServer extends Context.Service<MetricsServer, {
  /** `http://host:port/metrics`, or none when the listener is off. */
  readonly url: Option.Option<string>
}>()("das/platform/MetricsServer") {
  /**
   * `anyPortByDefault` (the embedded defaults, a developer's machine): with `METRICS_PORT`
   * unset, 9464 when it is free, else any free port, said in the log, so that a second instance
   * starts. Otherwise a taken port ends the start with one line naming `METRICS_PORT`.
   */
  static readonly layerFor = (options: { readonly anyPortByDefault: boolean }) => Layer.effect(
    MetricsServer,
    Effect.gen(function*() {
      const config = yield* MetricsConfig
      const raw = Option.getOrElse(config.port, () => String(DEFAULT_METRICS_PORT))
      if (raw.trim().toLowerCase() === "off") return MetricsServer.of({ url: Option.none() })
      const port = Number(raw)
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        return yield* Effect.die(new Error(`METRICS_PORT must be a port number, 0 or off; got "${raw}"`))
      }
      const fallback = options.anyPortByDefault && Option.isNone(config.port)
      const metrics = yield* Metrics
      const run = Effect.runPromiseWith(yield* Effect.context<never>())
      const server = createServer((req, res) => {
        const path = (req.url ?? "").split("?")[0]
        if (req.method !== "GET" || path !== "/metrics") {
          res.writeHead(404, { "content-type": "text/plain", "x-content-type-options": "nosniff" }).end("Not found: the metrics are at GET /metrics\n")
          return
        }
        run(metrics.scrape).then(
          (body) => res.writeHead(200, { "content-type": metrics.registry.contentType, "x-content-type-options": "nosniff" }).end(body),
          () => res.writeHead(500, { "content-type": "text/plain", "x-content-type-options": "nosniff" }).end("metrics could not be collected\n")
        )
      })
      const bound = yield* listenScoped(server, { name: "metrics", variable: "METRICS_PORT", host: config.host, port, fallBack: fallback })
      const url = `${httpOrigin(config.host, bound)}/metrics`
      yield* Effect.logInfo(`metrics: ${url}`)
      return MetricsServer.of({ url: Option.some(url) })
    })
  )

  static readonly layer = MetricsServer.layerFor({ anyPortByDefault: false })
}
