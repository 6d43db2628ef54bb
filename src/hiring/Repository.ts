/**
 * Hiring's repository: the mandates in PostgreSQL (`marketplace_mandates`), written before
 * `hire/build` answers and read back only by the signer who drafted them; and the same rows
 * as grants (`MandateGrants.ts`), with their enable operation's outcome and the account's
 * frozen flag.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { AcpDeployment } from "./AcpAbi.ts"
import { type MandateRecord, Mandates } from "./Mandate.ts"

interface MandateRow {
  readonly mandate_id: string
  readonly signer_address: string
  readonly account_id: string
  readonly account_address: string
  readonly chain_id: number
  readonly agent_wallet: string
  readonly delegatee_address: string
  readonly per_job_budget: number
  readonly per_job_budget_units: string
  readonly deployment: AcpDeployment
  readonly evaluator: string
  readonly delegation: MandateRecord["delegation"]
  readonly enable_build_id: string
  readonly enable_user_op_hash: string
  readonly created_at: Date
  readonly expires_at: Date
  readonly revoked_at?: Date | null
}

const fromRow = (r: MandateRow): MandateRecord => ({
  mandateId: r.mandate_id,
  signer: r.signer_address,
  account: r.account_address,
  accountId: r.account_id,
  chainId: r.chain_id,
  agentWallet: r.agent_wallet,
  delegatee: r.delegatee_address,
  perJobBudget: Number(r.per_job_budget),
  perJobBudgetBaseUnits: String(r.per_job_budget_units),
  deployment: r.deployment,
  evaluator: r.evaluator,
  delegation: r.delegation,
  enableBuildId: r.enable_build_id,
  enableUserOpHash: r.enable_user_op_hash,
  createdAt: new Date(r.created_at).toISOString(),
  expiresAt: new Date(r.expires_at).toISOString(),
  ...(r.revoked_at === null || r.revoked_at === undefined ? {} : { revokedAt: new Date(r.revoked_at).toISOString() })
})

/** Mandates in PostgreSQL (`marketplace_mandates`); written before `hire/build` answers. */
export const MandatesSql = Layer.effect(
  Mandates,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return Mandates.of({
      save: Effect.fn("Mandates.save")(function*(m) {
        yield* sql`
          INSERT INTO marketplace_mandates (mandate_id, signer_address, account_id, account_address, chain_id, agent_wallet,
                                            delegatee_address, per_job_budget, per_job_budget_units, deployment, evaluator,
                                            delegation, enable_build_id, enable_user_op_hash, created_at, expires_at)
          VALUES (${m.mandateId.toLowerCase()}, ${m.signer.toLowerCase()}, ${m.accountId}, ${m.account.toLowerCase()},
                  ${m.chainId}, ${m.agentWallet.toLowerCase()}, ${m.delegatee.toLowerCase()}, ${m.perJobBudget},
                  ${m.perJobBudgetBaseUnits}, ${JSON.stringify(m.deployment)}::jsonb, ${m.evaluator.toLowerCase()},
                  ${JSON.stringify(m.delegation)}::jsonb, ${m.enableBuildId}, ${m.enableUserOpHash},
                  ${new Date(m.createdAt)}, ${new Date(m.expiresAt)})`.pipe(Effect.orDie)
      }),
      get: Effect.fn("Mandates.get")(function*(signer, mandateId) {
        const rows = yield* sql<MandateRow>`
          SELECT * FROM marketplace_mandates
          WHERE mandate_id = ${mandateId.toLowerCase()} AND signer_address = ${signer.toLowerCase()}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(rows[0]), fromRow)
      })
    })
  })
)

/** A mandate as a grant: its terms, its enable operation's outcome, its account's frozen flag. */
export interface MandateGrantRow {
  readonly mandate_id: string
  readonly account_id: string
  readonly account_address: string
  readonly chain_id: number
  readonly agent_wallet: string
  readonly delegatee_address: string
  readonly per_job_budget: number
  readonly evaluator: string
  readonly delegation: MandateRecord["delegation"]
  readonly created_at: Date
  readonly expires_at: Date
  readonly revoked_at: Date | null
  readonly revoke_tx_hash: string | null
  readonly enable_status: string | null
  readonly frozen: boolean
}

export class MandateGrantRows extends Context.Service<MandateGrantRows, {
  /** The signer's mandates on every chain, newest first. */
  ofSigner(signer: string): Effect.Effect<ReadonlyArray<MandateGrantRow>>
  one(signer: string, mandateId: string): Effect.Effect<MandateGrantRow | undefined>
  /** The account's mandates neither revoked nor expired (what a freeze or unfreeze acts on). */
  grantableOf(accountId: string): Effect.Effect<ReadonlyArray<MandateGrantRow>>
  /** An executed revoke: the sender's mandates on that chain among `ids`, once. */
  markRevoked(revoke: { readonly ids: ReadonlyArray<string>; readonly sender: string; readonly chainId: number; readonly txHash: string }): Effect.Effect<void>
}>()("das/hiring/MandateGrantRows") {
  static readonly layer = Layer.effect(
    MandateGrantRows,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const select = (where: ReturnType<typeof sql.and>) =>
        sql<MandateGrantRow>`
          SELECT m.mandate_id, m.account_id, m.account_address, m.chain_id, m.agent_wallet, m.delegatee_address,
                 m.per_job_budget, m.evaluator, m.delegation, m.created_at, m.expires_at, m.revoked_at, m.revoke_tx_hash,
                 (SELECT o.outcome FROM user_operations o WHERE o.chain_id = m.chain_id AND o.user_op_hash = m.enable_user_op_hash
                  ORDER BY (o.outcome = 'mined') DESC LIMIT 1) AS enable_status,
                 a.frozen
          FROM marketplace_mandates m JOIN accounts a ON a.id = m.account_id
          WHERE ${where} ORDER BY m.created_at DESC`.pipe(Effect.orDie)
      return MandateGrantRows.of({
        ofSigner: (signer) => select(sql.and([sql`m.signer_address = ${signer.toLowerCase()}`])),
        one: (signer, mandateId) =>
          Effect.map(
            select(sql.and([sql`m.signer_address = ${signer.toLowerCase()}`, sql`m.mandate_id = ${mandateId.toLowerCase()}`])),
            (rows) => rows[0]
          ),
        grantableOf: (accountId) =>
          select(sql.and([sql`m.account_id = ${accountId}`, sql`m.revoked_at IS NULL`, sql`m.expires_at > now()`])),
        markRevoked: ({ ids, sender, chainId, txHash }) =>
          sql`
            UPDATE marketplace_mandates SET revoked_at = now(), revoke_tx_hash = ${txHash.toLowerCase()}
            WHERE mandate_id IN ${sql.in(ids.map((id) => id.toLowerCase()))} AND lower(account_address) = ${sender.toLowerCase()}
              AND chain_id = ${chainId} AND revoked_at IS NULL`.pipe(Effect.orDie, Effect.asVoid)
      })
    })
  )
}
