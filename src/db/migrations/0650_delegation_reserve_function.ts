import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The reservation in one statement (issue 46 item 3): `delegation_lock_reserve` takes the
 * grant's row lock (`FOR NO KEY UPDATE`, as 0490's `delegation_lock_ledger`), reads its status,
 * its account's frozen flag and its ledger (by a statement after the lock's, so in READ
 * COMMITTED it holds every reservation committed before the lock was granted), then inserts
 * the new reservation, and answers the first three. The service evaluates the policy on that
 * ledger before its transaction commits and rolls the transaction (the reservation with it)
 * back when the action is refused: the insert is kept only when the ledger it was checked
 * against is the one every other writer of the grant waits behind (the lock), so 50 actions
 * at once against room for 10 still take exactly 10. Nothing is inserted for a grant that is
 * not active or whose account is frozen (it is refused anyway). No row: no such grant.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION delegation_lock_reserve(p_id text, p_since jsonb, p_res jsonb)
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
        FROM (SELECT 1) AS one LEFT JOIN delegation_ledger(p_id, p_since, p_res ->> 'id') AS l ON true;
      IF s = 'active' AND NOT f THEN
        INSERT INTO delegation_reservations (id, delegation_id, token_address, units, recipient, status, expires_at, created_at,
                                             user_op_hash, op_build_id)
        VALUES (p_res ->> 'id', p_id, p_res ->> 'token', (p_res ->> 'units')::numeric, p_res ->> 'recipient', 'reserved',
                (p_res ->> 'expiresAt')::timestamptz, now(), p_res ->> 'userOpHash', p_res ->> 'opBuildId');
      END IF;
    END $$`)
})
