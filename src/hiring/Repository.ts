/**
 * Hiring's repository: the mandates in PostgreSQL (`marketplace_mandates`), written before
 * `hire/build` answers and read back only by the signer who drafted them.
 */
import { Effect, Layer, Option } from "effect"
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
