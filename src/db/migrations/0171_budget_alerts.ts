import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Budget alerts sent (docs/notifications.md): one row per (delegation, token, period start,
 * threshold). The unique key makes each alert exactly once under concurrency; a budget
 * without a period uses the epoch as its period start, so a renewing budget's periods fit
 * the same key.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE budget_alerts (
      delegation_id text NOT NULL REFERENCES delegations (id),
      token_address text NOT NULL,
      period_start timestamptz NOT NULL,
      threshold integer NOT NULL CHECK (threshold IN (80, 100)),
      notification_id text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (delegation_id, token_address, period_start, threshold)
    )`
})
