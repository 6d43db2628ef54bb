/**
 * The stored subtrees of accounts' entry trees (`audit_tree_nodes`, StoredTree.ts): SQL only.
 * The anchoring pass writes them; the proof endpoint and the pass read them.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { Hex32 } from "./Rfc6962.ts"
import { type NodeKey, TILE, TILE_LEVEL } from "./StoredTree.ts"

export interface NodeRequest {
  readonly accountId: string
  readonly key: NodeKey
}

export type NodeRow = {
  readonly account_id: string
  readonly level: number
  readonly idx: number
  readonly hash: string
}

export const nodeKey = (k: NodeKey) => `${k.level}:${k.index}`

/** Rows per statement (PostgreSQL takes at most 65,535 parameters). */
const CHUNK = 5_000

export const makeTreeNodes = (sql: SqlClient.SqlClient) => {
  /** The leaves each account's stored tiles cover (0: none), from its last stored tile. */
  const storedSizes = (accountIds: ReadonlyArray<string>) =>
    (accountIds.length === 0
      ? Effect.succeed<ReadonlyArray<{ account_id: string; tiles: number }>>([])
      : sql<{ account_id: string; tiles: number }>`
      SELECT account_id, max(idx) + 1 AS tiles FROM audit_tree_nodes
      WHERE level = ${TILE_LEVEL} AND account_id IN ${sql.in(accountIds)} GROUP BY account_id`).pipe(
      Effect.map((rows) => new Map(rows.map((r) => [r.account_id, Number(r.tiles) * TILE])))
    )

  /** The requested nodes that are stored, per account, keyed by `nodeKey`. */
  const read = (requests: ReadonlyArray<NodeRequest>) =>
    Effect.gen(function*() {
      const found = new Map<string, Map<string, Hex32>>()
      for (let i = 0; i < requests.length; i += CHUNK) {
        const values = requests.slice(i, i + CHUNK).map((r) => sql`(${r.accountId}, ${r.key.level}::smallint, ${r.key.index}::integer)`)
        const rows = yield* sql<NodeRow>`
          SELECT n.account_id, n.level, n.idx, n.hash FROM audit_tree_nodes n
          JOIN (VALUES ${sql.csv(values)}) AS w (account_id, level, idx)
            ON n.account_id = w.account_id AND n.level = w.level AND n.idx = w.idx`
        for (const r of rows) {
          if (!found.has(r.account_id)) found.set(r.account_id, new Map())
          found.get(r.account_id)!.set(nodeKey({ level: r.level, index: r.idx }), r.hash as Hex32)
        }
      }
      return found
    })

  /** Stores nodes; one already stored is kept (a node never changes: its leaves do not). */
  const write = (rows: ReadonlyArray<NodeRow>) =>
    Effect.gen(function*() {
      for (let i = 0; i < rows.length; i += CHUNK) {
        const chunk = rows.slice(i, i + CHUNK).map((r) => ({ ...r })) as unknown as [Record<string, unknown>, ...Array<Record<string, unknown>>]
        yield* sql`INSERT INTO audit_tree_nodes ${sql.insert(chunk)} ON CONFLICT DO NOTHING`
      }
    })

  /** Forgets an account's nodes (they did not match its anchored root: rebuilt from the entries). */
  const forget = (accountId: string) => sql`DELETE FROM audit_tree_nodes WHERE account_id = ${accountId}`

  return { storedSizes, read, write, forget }
}
