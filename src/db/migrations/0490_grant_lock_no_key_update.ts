import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The grant's row lock in `delegation_lock_ledger` becomes `FOR NO KEY UPDATE` (it was
 * `FOR UPDATE`); otherwise the function is 0430's. Its writers still queue on it one at a time
 * (the two modes conflict with each other), but a row that only refers to the grant (a foreign
 * key's `FOR KEY SHARE`: a budget alert, a reservation) no longer waits for it. Under load a
 * settlement that had finalized a reservation and then inserted the grant's budget alert waited
 * for the grant's lock while the relay's re-check held that lock and waited for the
 * reservation: PostgreSQL broke the cycle by failing one of them (`deadlock detected`), and an
 * action's build that lost answered 500 (issue 45 item 6; docs/decisions.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION delegation_lock_ledger(p_id text, p_since jsonb, p_except text)
    RETURNS TABLE (status text, frozen boolean, token_address text, final_units text, open_units text, final_n int, open_n int)
    LANGUAGE plpgsql AS $$
    DECLARE
      s text;
      f boolean;
    BEGIN
      SELECT d.status, a.frozen INTO s, f FROM delegations d JOIN accounts a ON a.id = d.account_id
      WHERE d.id = p_id FOR NO KEY UPDATE OF d;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      RETURN QUERY SELECT s, f, l.token_address, l.final_units, l.open_units, l.final_n, l.open_n
        FROM (SELECT 1) AS one LEFT JOIN delegation_ledger(p_id, p_since, p_except) AS l ON true;
    END $$`)
})
