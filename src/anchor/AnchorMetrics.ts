/**
 * Anchoring's metrics (docs/operations.md, "Metrics"), read from the database at scrape time:
 * per anchor chain, how long ago its last anchor was sent; per account chain, how many audit
 * entries no anchor covers yet.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { withMetrics } from "../platform/Metrics.ts"

export const registerAnchorMetrics = withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* metrics.gaugeOf(
      {
        name: "das_anchor_age_seconds",
        help: "Seconds since the last on-chain anchor of the audit log, per anchor chain (absent: never anchored there)",
        labelNames: ["chain_id"]
      },
      sql<{ chain_id: number; age: number }>`
        SELECT chain_id, extract(epoch FROM now() - max(anchored_at))::float8 AS age
        FROM audit_anchors GROUP BY chain_id`.pipe(
        Effect.map((rows) => rows.map((r) => ({ labels: { chain_id: Number(r.chain_id) }, value: r.age })))
      )
    )
    yield* metrics.gaugeOf(
      {
        name: "das_audit_unanchored_entries",
        help: "Audit entries that no on-chain anchor covers yet, per account chain",
        labelNames: ["chain_id"]
      },
      sql<{ chain_id: number; n: string }>`
        SELECT a.chain_id, sum(greatest(h.length - coalesce(s.length, 0), 0))::text AS n
        FROM audit_heads h JOIN accounts a ON a.id = h.account_id
          LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id
        GROUP BY a.chain_id`.pipe(
        Effect.map((rows) => rows.map((r) => ({ labels: { chain_id: Number(r.chain_id) }, value: Number(r.n) })))
      )
    )
  })
)
