import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Sponsorship counted beyond the signer (issue 31, src/builds/Sponsorship.ts): per client
 * address (`scope = 'address'`, `subject` = the address) and in all (`scope = 'global'`,
 * `subject` = ''), per quota period.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sponsor_totals (
      scope text NOT NULL CHECK (scope IN ('address', 'global')),
      subject text NOT NULL,
      period_start timestamptz NOT NULL,
      ops integer NOT NULL,
      gas numeric(78, 0) NOT NULL,
      PRIMARY KEY (scope, subject, period_start)
    )`
  yield* sql`CREATE INDEX sponsor_totals_period ON sponsor_totals (period_start)`
})
