import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The chain follower (src/follower, docs/follower.md): its cursor (the last block it read,
 * by number and hash), the hashes of the blocks it read that held something of ours (to find
 * where a reorg forked), and every inclusion it saw — an operation of a managed account or a
 * redemption of a known delegation — with the audit entry that records it. Keyed by the
 * block's hash and the log's index: a block read twice records nothing twice.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE chain_cursor (
      chain_id integer PRIMARY KEY,
      block_number bigint NOT NULL,
      block_hash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE chain_blocks (
      chain_id integer NOT NULL,
      block_number bigint NOT NULL,
      block_hash text NOT NULL,
      PRIMARY KEY (chain_id, block_number)
    )`
  yield* sql`
    CREATE TABLE chain_inclusions (
      chain_id integer NOT NULL,
      block_hash text NOT NULL,
      log_index integer NOT NULL,
      block_number bigint NOT NULL,
      tx_hash text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('user_operation', 'redemption', 'disable')),
      user_op_hash text,
      account_id text NOT NULL REFERENCES accounts (id),
      audit_event_id text,
      status text NOT NULL CHECK (status IN ('live', 'orphaned')),
      observed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (chain_id, block_hash, log_index)
    )`
  yield* sql`CREATE INDEX chain_inclusions_block ON chain_inclusions (chain_id, block_number) WHERE status = 'live'`
  yield* sql`CREATE INDEX chain_inclusions_op ON chain_inclusions (chain_id, user_op_hash, tx_hash)`
  yield* sql`CREATE INDEX user_operations_block ON user_operations (chain_id, (block_number::bigint)) WHERE transaction_hash IS NOT NULL`
})
