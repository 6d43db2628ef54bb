/**
 * The relay's metrics (docs/operations.md, "Metrics"): every `POST /userops` by outcome,
 * counted by this process, and the operations still waiting for the chain, read from the
 * database at scrape time.
 *
 * Outcomes: `accepted` (persisted and forwarded: 202), `settled` (already included or failed:
 * a resubmission answered from its record), `declined` (outside a delegation's scope),
 * `refused` (the request itself: bad signature, expired build, no such build), `bundler_error`
 * (the bundler refused it, or was unreachable or slow).
 */
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { registerSponsorshipMetrics } from "../builds/SponsorshipMetrics.ts"
import { Network } from "../chain/Network.ts"
import { type MetricsShape, withMetrics } from "../platform/Metrics.ts"
import { Relay } from "./Relay.ts"

const outcomeOf = (exit: Exit.Exit<{ readonly status: string }, { readonly _tag: string }>): string => {
  if (Exit.isSuccess(exit)) return exit.value.status === "submitted" ? "accepted" : "settled"
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (error === undefined || error._tag !== "Fail") return "error"
  switch (error.error._tag) {
    case "OutOfScope":
      return "declined"
    case "UpstreamUnavailable":
    case "UpstreamTimeout":
      return "bundler_error"
    default:
      return "refused"
  }
}

const register = (metrics: MetricsShape, sql: SqlClient.SqlClient, chainId: number) =>
  Effect.gen(function*() {
    yield* metrics.gaugeOf(
      { name: "das_relay_pending_operations", help: "Relayed operations not yet seen included or failed (status submitted)" },
      sql<{ n: number }>`SELECT count(*)::int AS n FROM user_operations WHERE status = 'submitted' AND chain_id = ${chainId}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0)
      )
    )
    yield* metrics.gaugeOf(
      {
        name: "das_relay_oldest_pending_seconds",
        help: "Age of the oldest relayed operation still waiting for the chain (0: none waiting)"
      },
      sql<{ age: number | null }>`
        SELECT extract(epoch FROM now() - min(submitted_at))::float8 AS age FROM user_operations
        WHERE status = 'submitted' AND chain_id = ${chainId}`.pipe(Effect.map((rows) => rows[0]?.age ?? 0))
    )
    return metrics.counter({
      name: "das_relay_submissions_total",
      help: "POST /userops by outcome: accepted, settled, declined, refused, bundler_error",
      labelNames: ["outcome"]
    })
  })

/** `relay` with its metrics (when the app has a `Metrics`). */
export const withRelayMetrics = <E, R>(relay: Layer.Layer<Relay, E, R>) =>
  Layer.effect(
    Relay,
    Effect.gen(function*() {
      const inner = yield* Relay
      const sql = yield* SqlClient.SqlClient
      const network = yield* Network
      let submit = inner.submit
      yield* registerSponsorshipMetrics
      yield* withMetrics((metrics) =>
        Effect.map(register(metrics, sql, network.chainId), (submissions) => {
          submit = (signer, op) =>
            inner.submit(signer, op).pipe(
              Effect.onExit((exit) => Effect.sync(() => submissions.inc({ outcome: outcomeOf(exit) })))
            )
        })
      )
      return Relay.of({ ...inner, submit })
    })
  ).pipe(Layer.provide(relay))
