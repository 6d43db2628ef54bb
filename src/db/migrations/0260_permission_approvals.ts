import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * ERC-7715 requests and revokes waiting for the owner (issue 24; docs/permissions.md): what a
 * `wallet_requestExecutionPermissions` or `wallet_revokeExecutionPermission` call (or its HTTP
 * twin) built, until the owner's wallet approves it with its signatures or rejects it. `items`
 * holds, per grant, the request as granted and the build to sign (per revoke, the grant and the
 * revoke build); `permissions` the standard responses once granted. A pending row past
 * `expires_at` reads as expired (its builds are no longer accepted).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE permission_approvals (
      id text PRIMARY KEY,
      signer_address text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('grant', 'revoke')),
      status text NOT NULL CHECK (status IN ('pending', 'approving', 'granted', 'revoked', 'rejected', 'failed')),
      items jsonb NOT NULL,
      permissions jsonb,
      failure text,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      decided_at timestamptz
    )`
  yield* sql`CREATE INDEX permission_approvals_signer ON permission_approvals (signer_address, created_at DESC)`
})
