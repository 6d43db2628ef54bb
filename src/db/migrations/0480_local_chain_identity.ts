import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The local chains this database describes, by the hash of their block 1 (the first deployment
 * of a local network; anvil rewrites block 0 when it loads its state again, block 1 it keeps):
 * a local chain started afresh has another, and the service then refuses to serve a database
 * that describes a chain that is gone (src/chain/LocalWorld.ts, docs/chains.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE local_chain_identity (
      chain_id integer PRIMARY KEY,
      first_block_hash text NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now()
    )`
})
