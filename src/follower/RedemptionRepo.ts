/**
 * The record of every redemption of a grant as the chain showed it (`delegation_redemptions`,
 * migration 0220): written by the chain follower (src/follower/FollowerLog.ts), read by the
 * delegations feature. SQL only, rows Schema-decoded; a database or decoding failure is a defect.
 * A redemption whose block left the chain is not read (its inclusion is orphaned).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

export const ChainLinkJson = Schema.Struct({ hash: Schema.String, delegator: Schema.String, delegate: Schema.String })
/** What moved, as stored: `units` in base units as a decimal string. */
export const MovedJson = Schema.Struct({ token: Schema.String, to: Schema.String, units: Schema.String })

export const RedemptionRow = Schema.Struct({
  chain_id: Schema.Number,
  block_hash: Schema.String,
  log_index: Schema.Number,
  block_number: Schema.String,
  tx_hash: Schema.String,
  root_hash: Schema.String,
  delegation_id: Schema.NullOr(Schema.String),
  account_id: Schema.String,
  redeemer: Schema.String,
  via: Schema.Literals(["transaction", "user_operation", "account_execute", "unknown"]),
  user_op_hash: Schema.NullOr(Schema.String),
  chain: Schema.Array(ChainLinkJson),
  moved: Schema.Array(MovedJson),
  owner_entry_id: Schema.NullOr(Schema.String),
  delegate_entry_id: Schema.NullOr(Schema.String)
})
export type RedemptionRow = typeof RedemptionRow.Type

export interface NewRedemption {
  readonly chainId: number
  readonly blockHash: string
  readonly logIndex: number
  readonly blockNumber: bigint
  readonly txHash: string
  readonly rootHash: string
  readonly delegationId: string | undefined
  readonly accountId: string
  readonly redeemer: string
  readonly via: RedemptionRow["via"]
  readonly userOpHash: string | undefined
  readonly chain: ReadonlyArray<typeof ChainLinkJson.Type>
  readonly moved: ReadonlyArray<{ readonly token: string; readonly to: string; readonly units: bigint }>
  readonly ownerEntryId: string | undefined
  readonly delegateEntryId: string | undefined
}

export class RedemptionRepo extends Context.Service<RedemptionRepo, {
  /** Records a redemption once (a second insert of the same log changes nothing). */
  insert(r: NewRedemption): Effect.Effect<void>
  /** A grant's redemptions still on the chain, oldest first. */
  listByDelegation(delegationId: string): Effect.Effect<ReadonlyArray<RedemptionRow>>
  /** Redemptions of an account's grants this service did not build, still on the chain, oldest first. */
  listForeign(accountId: string): Effect.Effect<ReadonlyArray<RedemptionRow>>
}>()("das/delegations/RedemptionRepo") {
  static readonly layer = Layer.effect(
    RedemptionRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const decode = Schema.decodeUnknownEffect(Schema.Array(RedemptionRow))
      const rows = <E>(query: Effect.Effect<ReadonlyArray<unknown>, E>) => query.pipe(Effect.flatMap((r) => decode(r)), Effect.orDie)
      const live = (where: ReturnType<typeof sql.and>) =>
        rows(sql`
          SELECT r.chain_id, r.block_hash, r.log_index, r.block_number::text, r.tx_hash, r.root_hash, r.delegation_id, r.account_id,
                 r.redeemer, r.via, r.user_op_hash, r.chain, r.moved, r.owner_entry_id, r.delegate_entry_id
          FROM delegation_redemptions r
          WHERE ${where} AND NOT EXISTS (
            SELECT 1 FROM chain_inclusions c WHERE c.chain_id = r.chain_id AND c.block_hash = r.block_hash
              AND c.log_index = r.log_index AND c.status = 'orphaned')
          ORDER BY r.block_number, r.log_index`)
      return RedemptionRepo.of({
        insert: (r) =>
          sql`
            INSERT INTO delegation_redemptions (chain_id, block_hash, log_index, block_number, tx_hash, root_hash, delegation_id,
              account_id, redeemer, via, user_op_hash, chain, moved, owner_entry_id, delegate_entry_id)
            VALUES (${r.chainId}, ${r.blockHash}, ${r.logIndex}, ${r.blockNumber.toString()}, ${r.txHash}, ${r.rootHash},
              ${r.delegationId ?? null}, ${r.accountId}, ${r.redeemer}, ${r.via}, ${r.userOpHash ?? null},
              ${JSON.stringify(r.chain)}::jsonb, ${JSON.stringify(r.moved.map((m) => ({ token: m.token, to: m.to, units: m.units.toString() })))}::jsonb,
              ${r.ownerEntryId ?? null}, ${r.delegateEntryId ?? null})
            ON CONFLICT (chain_id, block_hash, log_index) DO NOTHING`.pipe(Effect.orDie, Effect.asVoid),
        listByDelegation: (delegationId) => live(sql.and([sql`r.delegation_id = ${delegationId}`])),
        listForeign: (accountId) => live(sql.and([sql`r.account_id = ${accountId}`, sql`r.delegation_id IS NULL`]))
      })
    })
  )
}
