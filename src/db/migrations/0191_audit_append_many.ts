import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Group commit for audit appends (issue 16; docs/audit-log.md "Group commit",
 * docs/performance.md "Audit append"): `audit_append_many` appends several entries of ONE
 * account in one statement, so they share one head lock and one commit flush.
 *
 * It locks the account's head once (creating it on the first entry, as `audit_append`
 * does), then for each entry in array order does exactly what `audit_append` (migration
 * 0184) does for one: the entry is position `length + 1`, links to the head, gets the next
 * audit nonce when `executed`, and its hash is `sha256` of the four canonical-JSON pieces
 * joined with those three values. Entries are chained to each other in order, so the
 * result is the chain the same appends made one by one would have made.
 *
 * Every array has one element per entry. Returns one row per entry (`ord`, 1-based, in
 * input order): the written position, audit nonce, previous hash and hash; or, when the
 * operation or decline id already has an entry (in the table, or earlier in this batch),
 * NULLs there and `existing_id`, the entry that holds it. A duplicate writes nothing and
 * does not move the head: the next entry of the batch takes its place.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION audit_append_many(
      p_account_id text, p_genesis text,
      p_ids text[], p_operation_ids text[], p_decline_ids text[], p_occurred_at timestamptz[],
      p_actors text[], p_actions text[], p_amounts double precision[], p_tokens text[], p_chains text[],
      p_chain_ids integer[], p_statuses text[], p_decline_reasons text[], p_provenances text[], p_tx_hashes text[],
      p_delegation_ids text[], p_recipients text[],
      p_before_nonce text[], p_before_index text[], p_before_prev text[], p_after_prev text[])
    RETURNS TABLE (ord integer, chain_index integer, audit_nonce integer, prev_hash text, hash text, existing_id text)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      h audit_heads%ROWTYPE;
      v_length integer;
      v_head text;
      v_executed integer;
      v_nonce integer;
      v_hash text;
      v_written text;
      i integer;
    BEGIN
      SELECT * INTO h FROM audit_heads WHERE account_id = p_account_id FOR UPDATE;
      IF NOT FOUND THEN
        INSERT INTO audit_heads (account_id, length, head_hash, executed_count)
          VALUES (p_account_id, 0, p_genesis, 0) ON CONFLICT DO NOTHING;
        SELECT * INTO h FROM audit_heads WHERE account_id = p_account_id FOR UPDATE;
      END IF;
      v_length := h.length;
      v_head := h.head_hash;
      v_executed := h.executed_count;
      FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        v_nonce := CASE WHEN p_statuses[i] = 'executed' THEN v_executed + 1 END;
        v_hash := '0x' || encode(sha256(convert_to(
          p_before_nonce[i] || coalesce(v_nonce::text, 'null') || p_before_index[i] || (v_length + 1)::text ||
          p_before_prev[i] || '"' || v_head || '"' || p_after_prev[i], 'UTF8')), 'hex');
        INSERT INTO audit_entries AS e (id, account_id, chain_index, operation_id, decline_id, occurred_at, actor,
          action, amount, token, chain, chain_id, status, decline_reason, provenance, tx_hash, audit_nonce,
          delegation_id, recipient, prev_hash, hash)
        VALUES (p_ids[i], p_account_id, v_length + 1, p_operation_ids[i], p_decline_ids[i], p_occurred_at[i],
          p_actors[i], p_actions[i], p_amounts[i], p_tokens[i], p_chains[i], p_chain_ids[i], p_statuses[i],
          p_decline_reasons[i], p_provenances[i], p_tx_hashes[i], v_nonce, p_delegation_ids[i], p_recipients[i],
          v_head, v_hash)
        ON CONFLICT DO NOTHING
        RETURNING e.id INTO v_written;
        ord := i;
        IF v_written IS NULL THEN
          chain_index := NULL;
          audit_nonce := NULL;
          prev_hash := NULL;
          hash := NULL;
          IF p_operation_ids[i] IS NOT NULL THEN
            SELECT e.id INTO existing_id FROM audit_entries e WHERE e.operation_id = p_operation_ids[i];
          ELSE
            SELECT e.id INTO existing_id FROM audit_entries e WHERE e.decline_id = p_decline_ids[i];
          END IF;
        ELSE
          chain_index := v_length + 1;
          audit_nonce := v_nonce;
          prev_hash := v_head;
          hash := v_hash;
          existing_id := NULL;
          v_length := v_length + 1;
          v_head := v_hash;
          v_executed := v_executed + (CASE WHEN v_nonce IS NULL THEN 0 ELSE 1 END);
        END IF;
        RETURN NEXT;
      END LOOP;
      IF v_length <> h.length THEN
        UPDATE audit_heads SET length = v_length, head_hash = v_head, executed_count = v_executed
          WHERE account_id = p_account_id;
      END IF;
    END
    $fn$`
})
