import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Audit entries name where money went (`recipient`, issue 12): a new nullable column and
 * `audit_append` taking it. The hash covers `recipient` only when it is set (Chain.ts), so
 * every entry written before this migration hashes exactly as it did.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE audit_entries ADD COLUMN recipient text`
  yield* sql`DROP FUNCTION audit_append(text, text, text, text, timestamptz, text, text, double precision, text, text,
    integer, text, text, text, text, text, text, text, text, text, text)`
  yield* sql`
    CREATE FUNCTION audit_append(
      p_id text, p_account_id text, p_operation_id text, p_decline_id text, p_occurred_at timestamptz,
      p_actor text, p_action text, p_amount double precision, p_token text, p_chain text, p_chain_id integer,
      p_status text, p_decline_reason text, p_provenance text, p_tx_hash text, p_delegation_id text,
      p_recipient text, p_genesis text, p_before_nonce text, p_before_index text, p_before_prev text, p_after_prev text)
    RETURNS TABLE (chain_index integer, audit_nonce integer, prev_hash text, hash text)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      h audit_heads%ROWTYPE;
      v_nonce integer;
      v_hash text;
      v_written text;
    BEGIN
      SELECT * INTO h FROM audit_heads WHERE account_id = p_account_id FOR UPDATE;
      IF NOT FOUND THEN
        INSERT INTO audit_heads (account_id, length, head_hash, executed_count)
          VALUES (p_account_id, 0, p_genesis, 0) ON CONFLICT DO NOTHING;
        SELECT * INTO h FROM audit_heads WHERE account_id = p_account_id FOR UPDATE;
      END IF;
      v_nonce := CASE WHEN p_status = 'executed' THEN h.executed_count + 1 END;
      v_hash := '0x' || encode(sha256(convert_to(
        p_before_nonce || coalesce(v_nonce::text, 'null') || p_before_index || (h.length + 1)::text ||
        p_before_prev || '"' || h.head_hash || '"' || p_after_prev, 'UTF8')), 'hex');
      INSERT INTO audit_entries AS e (id, account_id, chain_index, operation_id, decline_id, occurred_at, actor,
        action, amount, token, chain, chain_id, status, decline_reason, provenance, tx_hash, audit_nonce,
        delegation_id, recipient, prev_hash, hash)
      VALUES (p_id, p_account_id, h.length + 1, p_operation_id, p_decline_id, p_occurred_at, p_actor,
        p_action, p_amount, p_token, p_chain, p_chain_id, p_status, p_decline_reason, p_provenance, p_tx_hash,
        v_nonce, p_delegation_id, p_recipient, h.head_hash, v_hash)
      ON CONFLICT DO NOTHING
      RETURNING e.id INTO v_written;
      IF v_written IS NULL THEN
        RETURN;
      END IF;
      UPDATE audit_heads SET length = h.length + 1, head_hash = v_hash,
        executed_count = h.executed_count + (CASE WHEN v_nonce IS NULL THEN 0 ELSE 1 END)
        WHERE account_id = p_account_id;
      chain_index := h.length + 1;
      audit_nonce := v_nonce;
      prev_hash := h.head_hash;
      hash := v_hash;
      RETURN NEXT;
    END
    $fn$`
})
