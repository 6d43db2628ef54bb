import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Approval requests (issue 25, docs/approvals.md): an action above its grant's approval
 * threshold, waiting for m of its n approvers. The request holds the action's reservation
 * (`delegation_reservations`, until the deadline); `approvers` is the rule as the grant's
 * caveat holds it (lowercase addresses), matched with `&&` against the addresses a signer
 * controls; the approvals given so far are `approval_signatures` (one per approver).
 * One pending request per identical action (`share_key`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE approval_requests (
      id text PRIMARY KEY,
      delegation_id text NOT NULL REFERENCES delegations (id),
      account_id text NOT NULL,
      owner_signer text NOT NULL,
      chain_id integer NOT NULL,
      permission_id text NOT NULL,
      delegator_address text NOT NULL,
      delegate_address text NOT NULL,
      requested_by text NOT NULL,
      reservation_id text NOT NULL,
      share_key text NOT NULL,
      token_address text NOT NULL,
      token_symbol text NOT NULL,
      token_decimals integer NOT NULL,
      units numeric(78, 0) NOT NULL CHECK (units > 0),
      recipient text NOT NULL,
      recipient_name text,
      gas_token text,
      call_data text NOT NULL,
      enforcer text NOT NULL,
      delegation_manager text NOT NULL,
      required integer NOT NULL CHECK (required >= 1),
      approvers text[] NOT NULL,
      nonce numeric(78, 0) NOT NULL,
      deadline timestamptz NOT NULL,
      summary text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'executed')),
      created_at timestamptz NOT NULL DEFAULT now(),
      approved_at timestamptz,
      denied_at timestamptz,
      denied_by text,
      deny_reason text,
      expired_at timestamptz,
      expired_reason text,
      built_at timestamptz,
      executed_at timestamptz,
      tx_hash text,
      operation_id text
    )`
  yield* sql`CREATE INDEX approval_requests_delegation ON approval_requests (delegation_id, created_at DESC)`
  yield* sql`CREATE INDEX approval_requests_owner ON approval_requests (owner_signer, created_at DESC)`
  yield* sql`CREATE INDEX approval_requests_approvers ON approval_requests USING gin (approvers)`
  yield* sql`CREATE INDEX approval_requests_open ON approval_requests (deadline) WHERE status IN ('pending', 'approved')`
  yield* sql`CREATE UNIQUE INDEX approval_requests_pending_action ON approval_requests (share_key) WHERE status = 'pending'`
  yield* sql`
    CREATE TABLE approval_signatures (
      request_id text NOT NULL REFERENCES approval_requests (id),
      approver text NOT NULL,
      signature text NOT NULL,
      submitted_by text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (request_id, approver)
    )`
})
