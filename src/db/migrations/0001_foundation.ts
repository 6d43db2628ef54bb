import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Sign-in nonces, sessions and accounts. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE signin_nonces (
      nonce text PRIMARY KEY,
      issued_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`
    CREATE TABLE sessions (
      id uuid PRIMARY KEY,
      token_hash bytea NOT NULL UNIQUE,
      signer_address text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX sessions_signer ON sessions (signer_address)`
  yield* sql`
    CREATE TABLE accounts (
      id text PRIMARY KEY,
      signer_address text NOT NULL,
      idx integer NOT NULL,
      label text NOT NULL,
      address text NOT NULL,
      chain_id integer NOT NULL,
      type text NOT NULL,
      purpose text NOT NULL,
      hidden boolean NOT NULL DEFAULT false,
      frozen boolean NOT NULL DEFAULT false,
      deployment_status text NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (signer_address, idx),
      UNIQUE (chain_id, address)
    )`
})
