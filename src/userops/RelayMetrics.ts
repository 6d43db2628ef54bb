/**
 * The relay's metrics (docs/operations.md, "Metrics"): every `POST /userops` by outcome,
 * counted by this process, and the operations still waiting for the chain, per served chain,
 * read from the database at scrape time.
 *
 * Outcomes: `accepted` (persisted and forwarded: 202), `settled` (already included or failed:
 * a resubmission answered from its record), `declined` (outside a delegation's scope),
 * `refused` (the request itself: bad signature, expired build, no such build), `bundler_error`
 * (the bundler refused it, or was unreachable or slow), `unavailable` (the database or the
 * chain was out of reach: 503).
 */
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Chains } from "../chain/Chains.ts"
import { type MetricsShape, type Reading, withMetrics } from "../platform/Metrics.ts"
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
    case "ServiceUnavailable":
      return "unavailable"
    case "Unauthorized":
      return "unauthorized"
    default:
      return "refused"
  }
}

const register = (metrics: MetricsShape, sql: SqlClient.SqlClient, chainIds: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const pending = sql<{ chain_id: number; n: number; age: number | null }>`
      SELECT chain_id, count(*)::int AS n, extract(epoch FROM now() - min(submitted_at))::float8 AS age
      FROM user_operations WHERE status = 'submitted' GROUP BY chain_id`
    // Every served chain has a reading (0 when nothing waits there).
    const perChain = (pick: (row: { n: number; age: number | null } | undefined) => number) =>
      Effect.map(pending, (rows): ReadonlyArray<Reading<"chain_id">> =>
        chainIds.map((chainId) => ({
          labels: { chain_id: chainId },
          value: pick(rows.find((r) => Number(r.chain_id) === chainId))
        })))
    yield* metrics.gaugeOf(
      {
        name: "das_relay_pending_operations",
        help: "Relayed operations not yet seen included or failed (status submitted), per chain",
        labelNames: ["chain_id"]
      },
      perChain((row) => row?.n ?? 0)
    )
    yield* metrics.gaugeOf(
      {
        name: "das_relay_oldest_pending_seconds",
        help: "Age of the oldest relayed operation still waiting for the chain (0: none waiting), per chain",
        labelNames: ["chain_id"]
      },
      perChain((row) => row?.age ?? 0)
    )
    return metrics.counter({
      name: "das_relay_submissions_total",
      help: "POST /userops by outcome: accepted, settled, declined, refused, bundler_error, unavailable, unauthorized",
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
      const chains = yield* Chains
      let submit = inner.submit
      let submitWithSession = inner.submitWithSession
      yield* withMetrics((metrics) =>
        Effect.map(register(metrics, sql, chains.ids), (submissions) => {
          const counted = <A extends { readonly status: string }, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
            effect.pipe(Effect.onExit((exit) => Effect.sync(() => submissions.inc({ outcome: outcomeOf(exit) }))))
          submit = (signer, op) => counted(inner.submit(signer, op))
          submitWithSession = (session, op) => counted(inner.submitWithSession(session, op))
        })
      )
      return Relay.of({ ...inner, submit, submitWithSession })
    })
  ).pipe(Layer.provide(relay))
