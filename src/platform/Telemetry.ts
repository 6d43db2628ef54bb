/**
 * OpenTelemetry tracing: every request is a server span (the HTTP layer makes it)
 * and every service method a child span (`Effect.fn("Service.method")`). Spans
 * are exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; with no
 * endpoint this layer is empty and nothing is exported.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "./AppConfig.ts"

export const tracesUrl = (endpoint: string) => `${endpoint.replace(/\/+$/, "")}/v1/traces`

export const TelemetryLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isNone(config.otlpEndpoint)) return Layer.empty
    const url = tracesUrl(config.otlpEndpoint.value)
    yield* Effect.logInfo(`tracing: exporting spans to ${url}`)
    return NodeSdk.layer(() => ({
      resource: { serviceName: config.serviceName },
      spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: 500 })
    }))
  })
)
