import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A build stored or shared in one round trip (issue 30, item 4; `BuildRepo.storeOrShare`):
 * serialized per operation hash (the advisory lock), the open identical build answered when
 * there is one, else the new row inserted. Three statements that were sent one by one.
 * Each statement of a PL/pgSQL function takes its own snapshot in READ COMMITTED, so the lookup
 * after the lock sees a build committed while this call waited for it, as the separate
 * statements did (one statement with CTEs would not: its snapshot predates the lock).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION op_build_store_or_share(b jsonb) RETURNS TABLE (open_id text, open_answer jsonb, open_metadata jsonb)
    LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtextextended('op_build:' || (b ->> 'user_op_hash'), 0));
      RETURN QUERY
        SELECT o.id, o.answer, o.metadata FROM op_builds o
        WHERE o.chain_id = (b ->> 'chain_id')::int AND o.user_op_hash = b ->> 'user_op_hash'
          AND o.account_id = b ->> 'account_id' AND o.intent_type = b ->> 'intent_type'
          AND o.share_key = b ->> 'share_key' AND o.answer IS NOT NULL AND o.expires_at > now()
          AND NOT EXISTS (SELECT 1 FROM user_operations u WHERE u.chain_id = o.chain_id
                            AND u.user_op_hash = o.user_op_hash AND u.status = 'failed')
        ORDER BY o.created_at DESC LIMIT 1;
      IF FOUND THEN
        RETURN;
      END IF;
      INSERT INTO op_builds (id, account_id, signer_address, intent_type, chain_id, entry_point, sender, nonce, call_data,
                             user_op, user_op_hash, risk_reducing, sponsored, human_summary, metadata, created_at, expires_at,
                             answer, share_key)
      SELECT r.id, r.account_id, r.signer_address, r.intent_type, r.chain_id, r.entry_point, r.sender, r.nonce, r.call_data,
             r.user_op, r.user_op_hash, r.risk_reducing, r.sponsored, r.human_summary, r.metadata, r.created_at, r.expires_at,
             r.answer, r.share_key
      FROM jsonb_populate_record(NULL::op_builds, b) r;
    END $$`)
})
