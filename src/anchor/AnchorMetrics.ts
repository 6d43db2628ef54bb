/**
 * Anchoring's metrics (docs/operations.md, "Metrics"), read from the database at scrape time:
 * how long ago the last anchor was sent, and how many audit entries no anchor covers yet.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { withMetrics } from "../platform/Metrics.ts"

export const registerAnchorMetrics = withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* metrics.gaugeOf(
      { name: "das_anchor_age_seconds", help: "Seconds since the last on-chain anchor of the audit log (absent: never anchored)" },
      sql<{ age: number | null }>`SELECT extract(epoch FROM now() - max(anchored_at))::float8 AS age FROM audit_anchors`.pipe(
        Effect.map((rows) => (rows[0]?.age === null || rows[0] === undefined ? [] : rows[0].age))
      )
    )
    yield* metrics.gaugeOf(
      { name: "das_audit_unanchored_entries", help: "Audit entries, over every account, that no on-chain anchor covers yet" },
      sql<{ n: string }>`
        SELECT coalesce(sum(greatest(h.length - coalesce(s.length, 0), 0)), 0)::text AS n
        FROM audit_heads h LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0))
      )
    )
  })
)
