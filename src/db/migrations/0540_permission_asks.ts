import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An agent asks an owner it works for for a new permission (issue 43, h43): the ask is the
 * owner's permission approval (`signer_address` the owner, as a dApp's request is), with the
 * asking agent's signer in `requested_by`, so the agent reads it back and one open ask per
 * agent and owner is found by an index.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE permission_approvals ADD COLUMN requested_by text`
  yield* sql`
    CREATE INDEX permission_approvals_requested_by ON permission_approvals (requested_by, signer_address, created_at DESC)
    WHERE requested_by IS NOT NULL`
})
