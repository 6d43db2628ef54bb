/**
 * The marketplace's stores backed by the service's own data: the managed wallet
 * each signer connected (PostgreSQL, survives restarts) and the addresses whose
 * jobs a signer may read (the signer and its smart accounts), and the hiring
 * mandates (PostgreSQL).
 */
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Accounts } from "../accounts/Accounts.ts"
import type { AcpDeployment } from "./AcpAbi.ts"
import { type MandateRecord, Mandates } from "./Mandate.ts"
import { ManagedWallets, MarketplaceCallers } from "./Marketplace.ts"

export const ManagedWalletsSql = Layer.effect(
  ManagedWallets,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Schema.Struct({ wallet_address: Schema.String }),
      execute: (signer) => sql`SELECT wallet_address FROM managed_wallets WHERE signer_address = ${signer}`
    })
    return ManagedWallets.of({
      get: Effect.fn("ManagedWallets.get")(function*(signer) {
        const row = yield* find(signer.toLowerCase()).pipe(Effect.orDie)
        return Option.map(row, (r) => r.wallet_address)
      }),
      set: Effect.fn("ManagedWallets.set")(function*(signer, wallet) {
        yield* sql`
          INSERT INTO managed_wallets (signer_address, wallet_address, connected_at)
          VALUES (${signer.toLowerCase()}, ${wallet.toLowerCase()}, now())
          ON CONFLICT (signer_address) DO UPDATE SET wallet_address = EXCLUDED.wallet_address, connected_at = now()`
          .pipe(Effect.orDie)
      })
    })
  })
)

export const MarketplaceCallersFromAccounts = Layer.effect(
  MarketplaceCallers,
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return MarketplaceCallers.of({
      addressesOf: Effect.fn("MarketplaceCallers.addressesOf")(function*(signer) {
        const list = yield* accounts.list(signer)
        return [signer.toLowerCase(), ...list.map((a) => a.address.toLowerCase())]
      })
    })
  })
)

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
