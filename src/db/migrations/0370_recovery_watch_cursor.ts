import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The recovery watcher's position per chain (src/owner/RecoveryWatcher.ts): the next block it
 * reads the Recovery contract's events from. Kept here so that a restart resumes where the last
 * pass ended (nothing missed) instead of from the chain's start; entries are keyed by the event
 * (chain, transaction, log index), so a block read twice records nothing twice.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE recovery_watch_cursor (
      chain_id integer PRIMARY KEY,
      next_block bigint NOT NULL CHECK (next_block >= 0),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
})
