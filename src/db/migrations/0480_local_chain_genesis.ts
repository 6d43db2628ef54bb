import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The local chains this database describes, by their genesis block's hash (issue 45): a local
 * chain started afresh has another genesis, and the service then refuses to serve a database
 * that describes a chain that is gone (src/chain/LocalWorld.ts, docs/chains.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE local_chain_genesis (
      chain_id integer PRIMARY KEY,
      genesis_hash text NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now()
    )`
})
