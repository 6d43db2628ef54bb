import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Fewer index entries per audit append (issue 16; docs/performance.md "Audit append",
 * step 3). Every entry has exactly one of `operation_id` and `decline_id` (the table's
 * CHECK), and most have no `delegation_id`, yet their indexes held an entry for the NULLs
 * too. They become partial indexes over the non-NULL values: the same uniqueness (NULLs
 * never conflicted), the same lookups (`= $1` implies `IS NOT NULL`), and the appends'
 * `ON CONFLICT DO NOTHING` (no target) still arbitrates on every unique index.
 *
 * The entries' foreign key to `accounts` goes: an entry is only ever written by
 * `audit_append`/`audit_append_many` under its account's head row, which is created first
 * and has the same key with its own foreign key to `accounts`, and accounts are never
 * deleted. The check it made per append was the same check, again.
 *
 * Each new index is built before the one it replaces is dropped, in the migration's
 * transaction, so uniqueness never lapses.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE UNIQUE INDEX audit_entries_operation ON audit_entries (operation_id) WHERE operation_id IS NOT NULL`
  yield* sql`ALTER TABLE audit_entries DROP CONSTRAINT audit_entries_operation_id_key`
  yield* sql`CREATE UNIQUE INDEX audit_entries_decline ON audit_entries (decline_id) WHERE decline_id IS NOT NULL`
  yield* sql`ALTER TABLE audit_entries DROP CONSTRAINT audit_entries_decline_id_key`
  yield* sql`CREATE INDEX audit_entries_delegation_set ON audit_entries (account_id, delegation_id, chain_index)
    WHERE delegation_id IS NOT NULL`
  yield* sql`DROP INDEX audit_entries_delegation`
  yield* sql`ALTER TABLE audit_entries DROP CONSTRAINT audit_entries_account_id_fkey`
})
