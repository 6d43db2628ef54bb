import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Group commit across accounts (issue 16; docs/audit-log.md "Group commit"):
 * `audit_append_accounts` appends entries of SEVERAL accounts in one statement, so they
 * share one commit. `p_account_ids` names each entry's account; entries of one account are
 * contiguous and in chain order, and the accounts come in ascending order (the caller sorts
 * them), so two such statements lock heads in the same order and never deadlock each other.
 * Each account's run of entries is exactly one `audit_append_many` (migration 0191): the
 * same lock, chaining, nonces, hashes and duplicate handling. Rows come back one per entry,
 * `ord` numbering the entries of the whole call.
 *
 * A head lock that is not granted within `lock_timeout` (set here for this statement's
 * transaction only) fails the statement: a caller's long transaction holding one account's
 * head must not hold up the entries of every other account in the batch. The caller then
 * writes the batch per account instead (GroupCommit.ts). `audit_append_timed` is
 * `audit_append` (migration 0184) under the same limit, for a single entry.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION audit_append_accounts(
      p_account_ids text[], p_genesis text,
      p_ids text[], p_operation_ids text[], p_decline_ids text[], p_occurred_at timestamptz[],
      p_actors text[], p_actions text[], p_amounts double precision[], p_tokens text[], p_chains text[],
      p_chain_ids integer[], p_statuses text[], p_decline_reasons text[], p_provenances text[], p_tx_hashes text[],
      p_delegation_ids text[], p_recipients text[],
      p_before_nonce text[], p_before_index text[], p_before_prev text[], p_after_prev text[],
      p_lock_timeout text)
    RETURNS TABLE (ord integer, chain_index integer, audit_nonce integer, prev_hash text, hash text, existing_id text)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      n integer := coalesce(array_length(p_ids, 1), 0);
      s integer := 1;
      e integer;
    BEGIN
      PERFORM set_config('lock_timeout', p_lock_timeout, true);
      WHILE s <= n LOOP
        e := s;
        WHILE e < n AND p_account_ids[e + 1] = p_account_ids[s] LOOP
          e := e + 1;
        END LOOP;
        RETURN QUERY SELECT m.ord + s - 1, m.chain_index, m.audit_nonce, m.prev_hash, m.hash, m.existing_id
          FROM audit_append_many(p_account_ids[s], p_genesis, p_ids[s:e], p_operation_ids[s:e], p_decline_ids[s:e],
            p_occurred_at[s:e], p_actors[s:e], p_actions[s:e], p_amounts[s:e], p_tokens[s:e], p_chains[s:e],
            p_chain_ids[s:e], p_statuses[s:e], p_decline_reasons[s:e], p_provenances[s:e], p_tx_hashes[s:e],
            p_delegation_ids[s:e], p_recipients[s:e], p_before_nonce[s:e], p_before_index[s:e], p_before_prev[s:e],
            p_after_prev[s:e]) AS m
          ORDER BY m.ord;
        s := e + 1;
      END LOOP;
    END
    $fn$`
  yield* sql`
    CREATE FUNCTION audit_append_timed(
      p_id text, p_account_id text, p_operation_id text, p_decline_id text, p_occurred_at timestamptz,
      p_actor text, p_action text, p_amount double precision, p_token text, p_chain text, p_chain_id integer,
      p_status text, p_decline_reason text, p_provenance text, p_tx_hash text, p_delegation_id text,
      p_recipient text, p_genesis text, p_before_nonce text, p_before_index text, p_before_prev text, p_after_prev text,
      p_lock_timeout text)
    RETURNS TABLE (chain_index integer, audit_nonce integer, prev_hash text, hash text)
    LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM set_config('lock_timeout', p_lock_timeout, true);
      RETURN QUERY SELECT * FROM audit_append(p_id, p_account_id, p_operation_id, p_decline_id, p_occurred_at,
        p_actor, p_action, p_amount, p_token, p_chain, p_chain_id, p_status, p_decline_reason, p_provenance,
        p_tx_hash, p_delegation_id, p_recipient, p_genesis, p_before_nonce, p_before_index, p_before_prev,
        p_after_prev);
    END
    $fn$`
})
