import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Grants held by an account (`GET /delegations?role=delegatee`, `DelegationRepo.listHeld`) are
 * found by the delegate's address and chain. Without an index that read scanned every grant of
 * every account: its cost grew with all grants, not with the holder's (bench/scale.ts).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX delegations_delegatee ON delegations (delegatee_address, chain_id)`
})
