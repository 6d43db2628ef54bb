import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The relay answers what the chain and the bundler say (issue 31, docs/relay.md):
 * - a bundler's refusal is kept in fields of its own (`bundler_error`: the JSON-RPC code,
 *   the EntryPoint's AA code, the reason name, the message, the decoded revert), not only
 *   inside the receipt's `reason` string;
 * - the open operations at a (sender, nonce) are found by an index of their own: when the
 *   chain shows that nonce used by another operation, they settle at once.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE user_operations ADD COLUMN bundler_error jsonb`
  yield* sql`CREATE INDEX user_operations_open_nonce ON user_operations (chain_id, sender, nonce) WHERE status = 'submitted'`
})
