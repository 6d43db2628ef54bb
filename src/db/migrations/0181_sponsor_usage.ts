import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Sponsored operations and gas per signer and quota period (src/builds/Sponsorship.ts). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sponsor_usage (
      signer_address text NOT NULL,
      period_start timestamptz NOT NULL,
      ops integer NOT NULL,
      gas numeric(78, 0) NOT NULL,
      PRIMARY KEY (signer_address, period_start)
    )`
  yield* sql`CREATE INDEX sponsor_usage_period ON sponsor_usage (period_start)`
})
