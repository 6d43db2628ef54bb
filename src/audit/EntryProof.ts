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
 */
import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { Conflict } from "../api/Errors.ts"
import { type AnchoredHead, merkleProof } from "./Merkle.ts"
import { inclusionProof, root as entriesRootOf } from "./Rfc6962.ts"
import { checkAnchored } from "./Anchored.ts"
import type { StoredEntry } from "./Chain.ts"
import type { AuditProof } from "./Domain.ts"
import { toAuditEvent } from "./Wire.ts"

const CoveringRow = Schema.Struct({
  anchor_id: Schema.String,
  length: Schema.Number,
  head_hash: Schema.String,
  entries_root: Schema.String,
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

export const makeEntryProof = (sql: SqlClient.SqlClient) =>
  Effect.fn("Activity.proof")(function*(entry: StoredEntry) {
    const covering = yield* sql`
      SELECT ah.anchor_id, ah.length, ah.head_hash, ah.entries_root, a.merkle_root, a.tx_hash,
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
    const head: AnchoredHead = {
      accountId: entry.accountId,
      length: anchor.length,
      headHash: anchor.head_hash as Hex,
      entriesRoot: anchor.entries_root as Hex
    }
    return {
      event: toAuditEvent(entry),
      leafIndex: entry.index - 1,
      treeSize: anchor.length,
      auditPath: inclusionProof(entry.index - 1, hashes),
      entriesRoot: anchor.entries_root,
      anchoredHead: { accountId: head.accountId, length: head.length, headHash: head.headHash, entriesRoot: anchor.entries_root },
      anchor: {
        merkleRoot: anchor.merkle_root,
        proof: [...merkleProof(heads, head)],
        txHash: anchor.tx_hash,
        blockNumber: anchor.block_number,
        chainId: anchor.chain_id,
        anchoredAt: anchor.anchored_at
      }
    } satisfies AuditProof
  })
