import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What a proof and an anchoring pass recomputed, stored once (issue 30, item 5;
 * docs/audit-log.md, "Stored subtrees"):
 * - `audit_tree_nodes`: each account's complete RFC 6962 subtrees at level ≥ 8 (256 leaves),
 *   written by the anchoring pass as it anchors the leaves under them (src/audit/StoredTree.ts).
 *   Empty after the upgrade: an account's first pass from now on reads its entries once, as
 *   before, and stores them; until then its proofs recompute from the entries, as before.
 * - `audit_anchor_heads.head_proof`: the head's proof in its anchor's Merkle tree (sibling
 *   hashes, comma-separated; '' for an anchor of one head), written by the pass that anchored
 *   it. NULL on heads anchored before: the pass fills one such anchor per round, and a proof
 *   of a head without one recomputes it from the anchor's heads, as before.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE audit_tree_nodes (
      account_id text NOT NULL REFERENCES accounts (id),
      level smallint NOT NULL,
      idx integer NOT NULL,
      hash text NOT NULL,
      PRIMARY KEY (account_id, level, idx)
    )`
  yield* sql`ALTER TABLE audit_anchor_heads ADD COLUMN head_proof text`
  yield* sql`
    CREATE INDEX audit_anchor_heads_unproven ON audit_anchor_heads (anchor_id)
    WHERE head_proof IS NULL AND entries_root IS NOT NULL`
})
