/**
 * The approval queue on `/metrics` (docs/operations.md, "Metrics"), read from the database at
 * scrape time, so every process shows the same figures: requests by chain and status (`pending`
 * is the queue; `approved` waits for the agent to build; `denied`, `expired` and `executed` are
 * how requests settled), and the age of the oldest pending request per chain.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Chains } from "../chain/Chains.ts"
import { type Reading, withMetrics } from "../platform/Metrics.ts"

/** Every status an approval request can have (migration 0270's CHECK). */
export const APPROVAL_STATUSES = ["pending", "approved", "denied", "expired", "executed"] as const

export const ApprovalMetricsLive = Layer.effectDiscard(withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { ids } = yield* Chains
    const counts = sql<{ chain_id: number; status: string; n: number; age: number | null }>`
      SELECT chain_id, status, count(*)::int AS n,
             extract(epoch FROM now() - min(created_at))::float8 AS age
      FROM approval_requests GROUP BY chain_id, status`
    yield* metrics.gaugeOf(
      {
        name: "das_approval_requests",
        help: "Approval requests by chain and status: pending (the queue), approved (waiting for the agent's build), " +
          "denied, expired, executed (how they settled)",
        labelNames: ["chain_id", "status"]
      },
      // Every served chain and status has a reading (0 when there is none).
      Effect.map(counts, (rows): ReadonlyArray<Reading<"chain_id" | "status">> =>
        ids.flatMap((chainId) =>
          APPROVAL_STATUSES.map((status) => ({
            labels: { chain_id: chainId, status },
            value: rows.find((r) => Number(r.chain_id) === chainId && r.status === status)?.n ?? 0
          }))
        ))
    )
    yield* metrics.gaugeOf(
      {
        name: "das_approval_oldest_pending_seconds",
        help: "Age of the oldest approval request still pending (0: none), per chain",
        labelNames: ["chain_id"]
      },
      Effect.map(counts, (rows): ReadonlyArray<Reading<"chain_id">> =>
        ids.map((chainId) => ({
          labels: { chain_id: chainId },
          value: rows.find((r) => Number(r.chain_id) === chainId && r.status === "pending")?.age ?? 0
        })))
    )
  })
))
