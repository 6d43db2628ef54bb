import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Audit append in one round trip (docs/audit-log.md, docs/performance.md): a server-side
 * function that locks the account's head row (creating it on the first entry), inserts the
 * entry and moves the head, all inside the one statement that calls it.
 *
 * The hash stays the documented one: SHA-256 over the RFC 8785 canonical JSON of the record.
 * The caller (AuditChain.append, in TypeScript) encodes everything it knows and leaves three
 * holes for what only the locked head knows, in key order: `auditNonce`, `index`, `prevHash`.
 * All three are integers or a `0x` + hex string, whose JSON form is their plain text form
 * (`prevHash` quoted), so filling them in SQL produces exactly the bytes TypeScript would.
 *
 * Returns one row (index, audit nonce, previous hash, hash) or none when the operation or
 * decline id already has an entry (nothing is written then: the head does not move).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION audit_append(
      p_id text, p_account_id text, p_operation_id text, p_decline_id text, p_occurred_at timestamptz,
      p_actor text, p_action text, p_amount double precision, p_token text, p_chain text, p_chain_id integer,
      p_status text, p_decline_reason text, p_provenance text, p_tx_hash text, p_delegation_id text,
      p_genesis text, p_before_nonce text, p_before_index text, p_before_prev text, p_after_prev text)
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
        -- First entry: a concurrent first append waits on this insert's key, then finds the row.
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
        delegation_id, prev_hash, hash)
      VALUES (p_id, p_account_id, h.length + 1, p_operation_id, p_decline_id, p_occurred_at, p_actor,
        p_action, p_amount, p_token, p_chain, p_chain_id, p_status, p_decline_reason, p_provenance, p_tx_hash,
        v_nonce, p_delegation_id, h.head_hash, v_hash)
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
