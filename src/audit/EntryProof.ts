/**
 * `GET /activity/{eventId}/proof`: what a client needs to prove an entry is under a root
 * anchored on chain (docs/audit-log.md, "Proving an entry"). The entry's RFC 6962 audit
 * path to the account's entries root at the anchored length (O(log n) hashes), the
 * anchored head (account, length, head hash, entries root), its proof to the anchor's
 * Merkle root, and the anchor transaction.
 *
 * The anchor used is the latest one of the account that covers the entry. An entry no
 * anchor covers yet is a 409 `conflict` (docs/decisions.md): it exists, it is just not
 * provable until the next anchoring round.
 *
 * What it reads (issue 30, item 5; docs/decisions.md, "What a proof re-verifies"): the stored
 * subtrees its path needs (StoredTree.ts, O(log n)), its own tile's leaves and those after
 * the last stored tile, and the head's stored proof in its anchor. Before answering it checks
 * that the path leads from the entry's hash to the anchored entries root, that the entry at
 * the anchored length still carries the anchored head hash, and that the head's proof leads
 * to the anchor's root. When a stored part is missing or fails that check, it recomputes
 * from every entry and every head of the anchor, as it always did (and logs the mismatch).
 */
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { Conflict } from "../api/Errors.ts"
import { type AnchoredHead, merkleProof, verifyProof } from "./Merkle.ts"
import { type Hex32, inclusionProof, root as entriesRootOf, verifyInclusion } from "./Rfc6962.ts"
import { checkAnchored, checkAnchoredAt } from "./Anchored.ts"
import { neededNodes, TILE, TILE_LEVEL, treeOf, usableSize } from "./StoredTree.ts"
import { makeTreeNodes, nodeKey } from "./TreeNodes.ts"
import type { StoredEntry } from "./Chain.ts"
import type { AuditProof } from "./Domain.ts"
import { toAuditEvent } from "./Wire.ts"

const CoveringRow = Schema.Struct({
  anchor_id: Schema.String,
  length: Schema.Number,
  head_hash: Schema.String,
  entries_root: Schema.String,
  head_proof: Schema.NullOr(Schema.String),
  merkle_root: Schema.String,
  tx_hash: Schema.String,
  block_number: Schema.String,
  chain_id: Schema.Number,
  anchored_at: Schema.String
})

const HeadRow = Schema.Struct({
  account_id: Schema.String,
  length: Schema.Number,
  head_hash: Schema.String,
  entries_root: Schema.NullOr(Schema.String)
})

export const makeEntryProof = (sql: SqlClient.SqlClient) => {
  const nodes = makeTreeNodes(sql)

  /**
   * The audit path of `entry` to the entries root at `length` from the stored subtrees, if
   * they are there and it checks (the path leads to `entriesRoot`, the entry at `length`
   * carries `headHash`); undefined otherwise.
   */
  const storedPath = (entry: StoredEntry, length: number, entriesRoot: string, headHash: string) =>
    Effect.gen(function*() {
      const sizes = yield* nodes.storedSizes([entry.accountId])
      const storedSize = usableSize(TILE_LEVEL, sizes.get(entry.accountId) ?? 0, length)
      if (storedSize === 0) return undefined
      const index = entry.index - 1
      const tileStart = Math.floor(index / TILE) * TILE
      const rows = yield* sql<{ chain_index: number; hash: string }>`
        SELECT chain_index, hash FROM audit_entries WHERE account_id = ${entry.accountId} AND (
          (chain_index > ${storedSize} AND chain_index <= ${length})
          OR (chain_index > ${tileStart} AND chain_index <= ${Math.min(tileStart + TILE, length)})
          OR chain_index = ${length})`
      const hashAt = new Map(rows.map((r) => [r.chain_index, r.hash]))
      const source = { tileLevel: TILE_LEVEL, storedSize, entry: (i: number) => hashAt.get(i + 1) }
      const needed = neededNodes(source, (t) => t.path(index, length))
      const found = (yield* nodes.read(needed.map((key) => ({ accountId: entry.accountId, key })))).get(entry.accountId)
      const tree = treeOf({ ...source, stored: (k) => found?.get(nodeKey(k)) })
      const path = tree.path(index, length)
      const ok = tree.missing.length === 0 &&
        checkAnchoredAt(length, (position) => hashAt.get(position), [{ length, headHash }]) === undefined &&
        verifyInclusion(index, length, entry.hash, path, entriesRoot)
      if (!ok) yield* Effect.logError(`stored tree nodes of ${entry.accountId} do not prove entry #${entry.index}; recomputed from its entries`)
      return ok ? path : undefined
    })

  return Effect.fn("Activity.proof")(function*(entry: StoredEntry) {
    const covering = yield* sql`
      SELECT ah.anchor_id, ah.length, ah.head_hash, ah.entries_root, ah.head_proof, a.merkle_root, a.tx_hash,
        a.block_number::text AS block_number, a.chain_id,
        to_char(a.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS anchored_at
      FROM audit_anchor_heads ah JOIN audit_anchors a ON a.id = ah.anchor_id
      WHERE ah.account_id = ${entry.accountId} AND ah.length >= ${entry.index} AND ah.entries_root IS NOT NULL
      ORDER BY ah.length DESC, a.anchored_at DESC LIMIT 1`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(CoveringRow))),
      Effect.orDie
    )
    const anchor = covering[0]
    if (anchor === undefined) {
      return yield* new Conflict({
        message: `entry #${entry.index} of ${entry.accountId} is not anchored yet; the next anchoring round covers it`
      })
    }
    const fromStored = yield* storedPath(entry, anchor.length, anchor.entries_root, anchor.head_hash).pipe(Effect.orDie)
    const auditPath: ReadonlyArray<Hex32> = fromStored ?? (yield* Effect.gen(function*() {
      // Every entry up to the anchored length: the account has no stored tiles yet, or they did not check.
      const hashes = (yield* sql<{ hash: string }>`
        SELECT hash FROM audit_entries WHERE account_id = ${entry.accountId} AND chain_index <= ${anchor.length}
        ORDER BY chain_index`.pipe(Effect.orDie)).map((r) => r.hash)
      const rewrite = checkAnchored(hashes, [{ length: anchor.length, headHash: anchor.head_hash }])
      if (rewrite !== undefined || entriesRootOf(hashes) !== anchor.entries_root) {
        yield* Effect.logError(`audit chain of ${entry.accountId} no longer matches its anchor ${anchor.anchor_id}`)
        return yield* new Conflict({
          message: `the chain of ${entry.accountId} no longer matches its anchor: ${rewrite?.message ?? "entries root differs"}`
        })
      }
      return inclusionProof(entry.index - 1, hashes)
    }))
    const head: AnchoredHead = {
      accountId: entry.accountId,
      length: anchor.length,
      headHash: anchor.head_hash as Hex,
      entriesRoot: anchor.entries_root as Hex
    }
    // The head's proof as its pass stored it, if it leads to the anchor's root; else from every head of the anchor.
    const stored = anchor.head_proof === null
      ? undefined
      : anchor.head_proof === "" ? [] : anchor.head_proof.split(",") as Array<Hex>
    const storedOk = stored !== undefined && verifyProof(head, stored, anchor.merkle_root as Hex)
    if (stored !== undefined && !storedOk) {
      yield* Effect.logError(`the stored proof of ${entry.accountId}'s head in anchor ${anchor.anchor_id} does not lead to its root; recomputed`)
    }
    const headProof = storedOk ? stored : yield* Effect.gen(function*() {
      const heads = (yield* sql`
        SELECT account_id, length, head_hash, entries_root FROM audit_anchor_heads WHERE anchor_id = ${anchor.anchor_id}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(HeadRow))),
        Effect.orDie
      )).map((h): AnchoredHead => ({
        accountId: h.account_id,
        length: h.length,
        headHash: h.head_hash as Hex,
        entriesRoot: (h.entries_root ?? undefined) as Hex | undefined
      }))
      return merkleProof(heads, head)
    })
    return {
      event: toAuditEvent(entry),
      leafIndex: entry.index - 1,
      treeSize: anchor.length,
      auditPath: [...auditPath],
      entriesRoot: anchor.entries_root,
      anchoredHead: { accountId: head.accountId, length: head.length, headHash: head.headHash, entriesRoot: anchor.entries_root },
      anchor: {
        merkleRoot: anchor.merkle_root,
        proof: [...headProof],
        txHash: anchor.tx_hash,
        blockNumber: anchor.block_number,
        chainId: anchor.chain_id,
        anchoredAt: anchor.anchored_at
      }
    } satisfies AuditProof
  })
}
