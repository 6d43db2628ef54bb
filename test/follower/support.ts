import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

/** The follower's cursor on `chainId` (the last block it read), once its first pass wrote one. */
export const cursorOf = (sql: SqlClient.SqlClient, chainId: number) =>
  sql<{ n: string }>`SELECT block_number::text AS n FROM chain_cursor WHERE chain_id = ${chainId}`.pipe(
    Effect.orDie,
    Effect.map((rows) => (rows[0] === undefined ? undefined : BigInt(rows[0].n)))
  )
