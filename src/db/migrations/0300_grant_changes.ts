import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Asking for more (issue 25, item 3; docs/approvals.md "Asking for more"): an agent's request to
 * change its grant, and the replacement grant the owner's one operation enables. A replacement
 * names the grant it `replaces` and what that grant had already spent (`carried`: units per token
 * address and actions), which its on-chain limits were lowered by and its reads add back.
 * One open (pending or accepting) request per grant.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE delegation_builds ADD COLUMN replaces text, ADD COLUMN carried jsonb`
  yield* sql`ALTER TABLE delegations ADD COLUMN replaces text, ADD COLUMN carried jsonb`
  yield* sql`CREATE UNIQUE INDEX delegations_one_replacement ON delegations (replaces) WHERE replaces IS NOT NULL AND status IN ('pending', 'active', 'revoked')`
  yield* sql`
    CREATE TABLE grant_change_requests (
      id text PRIMARY KEY,
      delegation_id text NOT NULL REFERENCES delegations (id),
      account_id text NOT NULL,
      owner_signer text NOT NULL,
      chain_id integer NOT NULL,
      delegate_address text NOT NULL,
      requested_by text NOT NULL,
      changes jsonb NOT NULL,
      diff jsonb NOT NULL,
      reason text NOT NULL,
      summary text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepting', 'accepted', 'declined', 'expired')),
      deadline timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      build_id text,
      build_hash text,
      new_delegation_id text,
      decided_at timestamptz,
      decided_by text,
      decline_reason text,
      expired_reason text
    )`
  yield* sql`CREATE UNIQUE INDEX grant_change_requests_open ON grant_change_requests (delegation_id) WHERE status IN ('pending', 'accepting')`
  yield* sql`CREATE INDEX grant_change_requests_owner ON grant_change_requests (owner_signer, created_at DESC)`
  yield* sql`CREATE INDEX grant_change_requests_agent ON grant_change_requests (requested_by, created_at DESC)`
  yield* sql`CREATE INDEX grant_change_requests_due ON grant_change_requests (deadline) WHERE status IN ('pending', 'accepting')`
})
