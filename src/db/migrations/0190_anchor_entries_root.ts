import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Anchored heads carry the RFC 6962 root of the account's entries at the anchored length
 * (issue 12; docs/audit-log.md, "Proving an entry"). NULL on heads anchored before this
 * migration (the `das-anchor-v1` leaf had no entries root); the anchorer re-anchors those
 * heads in its next round, so every account gets a provable anchor.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE audit_anchor_heads ADD COLUMN entries_root text`
  yield* sql`ALTER TABLE audit_anchor_state ADD COLUMN entries_root text`
  // The proof endpoint looks up the anchors covering an entry by account and length.
  yield* sql`CREATE INDEX audit_anchor_heads_account_length ON audit_anchor_heads (account_id, length)`
})
