import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * x402 payments under a grant (issue 26; docs/payments.md, "Through the service"): one row per
 * payment delegation the service handed an agent to sign (`authorized`, with the resource it pays
 * for and its reservation against the grant's budget), settled when the chain follower sees its
 * redemption (`settled`: what moved, the transaction, the owner's entry). A payment redeemed under
 * a grant of ours that the service never authorized (signed around it) is recorded too, without a
 * resource or a reservation of its own. Keyed by the payment delegation's hash on its chain.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE x402_payments (
      id text PRIMARY KEY,
      chain_id integer NOT NULL,
      payment_hash text NOT NULL,
      delegation_id text NOT NULL REFERENCES delegations (id),
      account_id text NOT NULL REFERENCES accounts (id),
      reservation_id text REFERENCES delegation_reservations (id),
      signer_address text,
      scheme text NOT NULL CHECK (scheme IN ('exact', 'upto')),
      asset text NOT NULL,
      pay_to text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      facilitator text NOT NULL,
      resource_url text,
      resource_description text,
      valid_before timestamptz NOT NULL,
      status text NOT NULL CHECK (status IN ('authorized', 'settled')),
      settled_units numeric(78, 0),
      tx_hash text,
      block_hash text,
      log_index integer,
      audit_event_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      settled_at timestamptz,
      UNIQUE (chain_id, payment_hash)
    )`
  yield* sql`CREATE INDEX x402_payments_delegation ON x402_payments (delegation_id, created_at)`
})
