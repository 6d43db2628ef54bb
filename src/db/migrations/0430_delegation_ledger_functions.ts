import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A grant's ledger in one place (issue 30, item 4; `DelegationRepo.ledger` and `lockWithLedger`):
 * - `delegation_ledger`: per token, the final units (in the token's current period when
 *   `since` names its start), the open ones (submitted, or reserved and unexpired) and their
 *   counts, leaving out reservation `except`; released rows count nowhere, and saying so lets
 *   the grant's live index answer (docs/performance.md, "third pass");
 * - `delegation_lock_ledger`: the grant's row lock (`FOR UPDATE`), then its status, its
 *   account's frozen flag and its ledger, in one round trip where there were two. The ledger
 *   is read by a statement after the lock's: in READ COMMITTED each statement of a PL/pgSQL
 *   function takes its own snapshot, so it holds every reservation committed before the lock
 *   was granted, as the separate statements did. No row: the grant does not exist. A grant with
 *   no reservation: one row with the ledger's columns null.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION delegation_ledger(p_id text, p_since jsonb, p_except text)
    RETURNS TABLE (token_address text, final_units text, open_units text, final_n int, open_n int)
    LANGUAGE sql STABLE AS $$
      SELECT r.token_address,
        coalesce(sum(r.units) FILTER (WHERE r.status = 'final'
          AND r.settled_at >= coalesce((p_since ->> r.token_address)::timestamptz, '-infinity')), 0)::text,
        coalesce(sum(r.units) FILTER (WHERE r.status = 'submitted' OR (r.status = 'reserved' AND r.expires_at > now())), 0)::text,
        (count(*) FILTER (WHERE r.status = 'final'))::int,
        (count(*) FILTER (WHERE r.status = 'submitted' OR (r.status = 'reserved' AND r.expires_at > now())))::int
      FROM delegation_reservations r
      WHERE r.delegation_id = p_id AND r.status <> 'released' AND r.id <> coalesce(p_except, '')
      GROUP BY r.token_address
    $$`)
  yield* sql.unsafe(`
    CREATE FUNCTION delegation_lock_ledger(p_id text, p_since jsonb, p_except text)
    RETURNS TABLE (status text, frozen boolean, token_address text, final_units text, open_units text, final_n int, open_n int)
    LANGUAGE plpgsql AS $$
    DECLARE
      s text;
      f boolean;
    BEGIN
      SELECT d.status, a.frozen INTO s, f FROM delegations d JOIN accounts a ON a.id = d.account_id
      WHERE d.id = p_id FOR UPDATE OF d;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      RETURN QUERY SELECT s, f, l.token_address, l.final_units, l.open_units, l.final_n, l.open_n
        FROM (SELECT 1) AS one LEFT JOIN delegation_ledger(p_id, p_since, p_except) AS l ON true;
    END $$`)
})
