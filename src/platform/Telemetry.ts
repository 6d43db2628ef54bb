/**
 * OpenTelemetry tracing: every request is a server span named by its route (`GET
 * /accounts/:accountId`, Server.ts) and every service method a child span
 * (`Effect.fn("Service.method")`). Spans are exported over OTLP/HTTP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set. With no endpoint no span is made at all: nobody could
 * see one, and on the hot paths they cost ≈ 20 µs of CPU per request (docs/performance.md,
 * "GET /accounts", step 4). A request's `requestId` is then an id of its own
 * (`src/api/Envelope.ts`).
 *
 * A background loop's pass that found nothing to do (src/platform/Loop.ts) is not exported,
 * nor anything under it, unless something in it failed: an idle service sends no span per tick.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { type Context as OtelContext, SpanStatusCode } from "@opentelemetry/api"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor, type ReadableSpan, type Span, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Effect, Layer, Option, References } from "effect"
import { AppConfig } from "./AppConfig.ts"
import { IDLE_ATTRIBUTE } from "./Loop.ts"

export const tracesUrl = (endpoint: string) => `${endpoint.replace(/\/+$/, "")}/v1/traces`

/**
 * Holds the spans of each loop pass's trace (a root span named `loop …`) until the pass ends,
 * then hands them on, or drops them all when the pass was idle and nothing in it failed.
 */
export class IdleLoopFilter implements SpanProcessor {
  private readonly held = new Map<string, Array<ReadableSpan>>()

  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: OtelContext): void {
    if (span.parentSpanContext === undefined && span.name.startsWith("loop ")) this.held.set(span.spanContext().traceId, [])
    this.next.onStart(span, parentContext)
  }

  onEnd(span: ReadableSpan): void {
    const traceId = span.spanContext().traceId
    const held = this.held.get(traceId)
    if (held === undefined) return this.next.onEnd(span)
    if (span.parentSpanContext !== undefined) {
      held.push(span)
      return
    }
    this.held.delete(traceId)
    const idle = span.attributes[IDLE_ATTRIBUTE] === true && !held.some((s) => s.status.code === SpanStatusCode.ERROR)
    if (idle) return
    for (const s of held) this.next.onEnd(s)
    this.next.onEnd(span)
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush()
  }

  shutdown(): Promise<void> {
    return this.next.shutdown()
  }
}

/** The batch processor's settings (OpenTelemetry's `OTEL_BSP_*`). */
export interface BatchSettings {
  readonly scheduledDelayMillis: number
  readonly maxQueueSize: number
  readonly maxExportBatchSize: number
}

/** The service's: an export every 500 ms (the SDK's is 5 s), the SDK's queue and batch sizes. */
const defaultBatch: BatchSettings = { scheduledDelayMillis: 500, maxQueueSize: 2048, maxExportBatchSize: 512 }

/** The processor of the service's spans: batched to `url`, idle loop passes left out. */
export const spanProcessorFor = (url: string, batch: BatchSettings = defaultBatch): SpanProcessor =>
  new IdleLoopFilter(new BatchSpanProcessor(new OTLPTraceExporter({ url }), { ...batch }))

/**
 * OpenTelemetry's standard batch settings, each optional: `OTEL_BSP_SCHEDULE_DELAY` (ms),
 * `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`. (The benchmark of the decision
 * holds every span until the service stops, so that no export runs beside what it times.)
 */
const batchSettings = Config.all({
  scheduledDelayMillis: Config.Int("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(defaultBatch.scheduledDelayMillis)),
  maxQueueSize: Config.Int("OTEL_BSP_MAX_QUEUE_SIZE").pipe(Config.withDefault(defaultBatch.maxQueueSize)),
  maxExportBatchSize: Config.Int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").pipe(Config.withDefault(defaultBatch.maxExportBatchSize))
})

export const TelemetryLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.otlpEndpoint)) return Layer.succeed(References.TracerEnabled, false)
    const url = tracesUrl(config.otlpEndpoint.value)
    const batch = yield* batchSettings
    yield* Effect.logInfo(`tracing: exporting spans to ${url}`)
    return NodeSdk.layer(() => ({
      resource: { serviceName: config.serviceName },
      spanProcessor: spanProcessorFor(url, batch)
    }))
  })
)
