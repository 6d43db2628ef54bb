/**
 * OpenTelemetry tracing: every request is a server span (the HTTP layer makes it)
 * and every service method a child span (`Effect.fn("Service.method")`). Spans
 * are exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. With no
 * endpoint no span is made at all: nobody could see one, and on the hot paths they
 * cost ≈ 20 µs of CPU per request (docs/performance.md, "GET /accounts", step 4). A
 * request's `requestId` is then an id of its own (`src/api/Envelope.ts`).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Option, References } from "effect"
import { AppConfig } from "./AppConfig.ts"

export const tracesUrl = (endpoint: string) => `${endpoint.replace(/\/+$/, "")}/v1/traces`

export const TelemetryLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.otlpEndpoint)) return Layer.succeed(References.TracerEnabled, false)
    const url = tracesUrl(config.otlpEndpoint.value)
    yield* Effect.logInfo(`tracing: exporting spans to ${url}`)
    return NodeSdk.layer(() => ({
      resource: { serviceName: config.serviceName },
      spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 500 })
    }))
  })
)
