import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An operation is its hash and its signature (docs/relay.md, "Matching"): a refused copy with
 * another signature never answers for a correctly signed one. At most one operation per hash
 * is live (submitted or included); refused ones stay beside it, one per signature.
 * Builds are matched by their hash.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE user_operations ADD COLUMN signature_hash text`
  yield* sql`UPDATE user_operations SET signature_hash = '0x' || encode(sha256(convert_to(user_op->>'signature', 'UTF8')), 'hex')`
  yield* sql`ALTER TABLE user_operations DROP CONSTRAINT user_operations_chain_id_user_op_hash_key`
  yield* sql`CREATE UNIQUE INDEX user_operations_live ON user_operations (chain_id, user_op_hash) WHERE status <> 'failed'`
  yield* sql`CREATE UNIQUE INDEX user_operations_signed ON user_operations (chain_id, user_op_hash, signature_hash)`
  yield* sql`CREATE INDEX op_builds_hash ON op_builds (chain_id, user_op_hash)`
})
