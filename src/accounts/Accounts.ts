/**
 * A signer's smart accounts, and the scoping rule every account-scoped read uses:
 * no `accountId` → the signer's visible account with the lowest index; an
 * `accountId` that is unknown or another signer's → `NotFound`, never ignored.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NotFound } from "../api/Errors.ts"
import type { Address } from "../domain/Primitives.ts"
import { hotSpan } from "../platform/HotSpan.ts"
import { AccountFactory } from "./AccountFactory.ts"
import type { Account } from "./Domain.ts"

/** An `accounts` row (also read by DelegationRepo). */
export const AccountRow = Schema.Struct({
  id: Schema.String,
  signer_address: Schema.String,
  idx: Schema.Number,
  label: Schema.String,
  address: Schema.String,
  chain_id: Schema.Number,
  type: Schema.String,
  purpose: Schema.String,
  hidden: Schema.Boolean,
  frozen: Schema.Boolean,
  deployment_status: Schema.String,
  created_at: Schema.Date
})
type AccountRow = typeof AccountRow.Type

export const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  label: row.label,
  address: row.address,
  type: row.type,
  deploymentStatus: row.deployment_status,
  chainId: row.chain_id,
  signerAddress: row.signer_address,
  frozen: row.frozen,
  index: row.idx,
  hidden: row.hidden,
  purpose: row.purpose,
  createdAt: row.created_at.toISOString(),
  // Balances are not tracked by this service; fiat totals come from a pricing source it does not have.
  totalFiat: 0
})

/**
 * The account's frozen flag as stored now (inside a transaction: as that transaction sees it).
 * Read apart from the account's row where the flag may have changed since the row was read.
 */
export const readFrozen = (sql: SqlClient.SqlClient, accountId: string): Effect.Effect<boolean> =>
  sql<{ frozen: boolean }>`SELECT frozen FROM accounts WHERE id = ${accountId}`.pipe(
    Effect.map((rows) => rows[0]?.frozen === true),
    Effect.orDie
  )

/** Addresses are compared and stored lowercase; checksummed forms are for display only. */
export const normalizeAddress = (a: string): Address => a.toLowerCase()

export class Accounts extends Context.Service<Accounts, {
  readonly ensurePrimary: (signer: Address) => Effect.Effect<Account>
  readonly list: (signer: Address) => Effect.Effect<ReadonlyArray<Account>>
  readonly create: (signer: Address, label?: string) => Effect.Effect<Account>
  /** The account a request is scoped to (see the module comment). */
  readonly resolve: (signer: Address, accountId?: string) => Effect.Effect<Account, NotFound>
  readonly findById: (signer: Address, accountId: string) => Effect.Effect<Account, NotFound>
}>()("das/accounts/Accounts") {
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const factory = yield* AccountFactory

      const listRows = SqlSchema.findAll({
        Request: Schema.String,
        Result: AccountRow,
        execute: (signer) => sql`SELECT * FROM accounts WHERE signer_address = ${signer} ORDER BY idx`
      })

      const insertAt = (signer: Address, index: number, label: string, purpose: string) =>
        Effect.gen(function*() {
          const address = yield* factory.counterfactualAddress(signer, index)
          const rows = yield* sql`
            INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
            VALUES (${`acc_${crypto.randomUUID()}`}, ${signer}, ${index}, ${label}, ${normalizeAddress(address)},
                    ${factory.chainId}, ${factory.accountType}, ${purpose}, ${"counterfactual"}, now())
            ON CONFLICT DO NOTHING
            RETURNING *`
          return rows.length > 0
        })

      const rowsOf = (signer: Address) => listRows(signer).pipe(Effect.map((rows) => rows.map(toAccount)))

      const ensurePrimary = Effect.fn("Accounts.ensurePrimary")(function*(signer: Address) {
        yield* insertAt(signer, 0, "Primary", "primary")
        const rows = yield* rowsOf(signer)
        return rows[0]!
      }, Effect.orDie)

      // A hot read: a span, without `Effect.fn`'s per-call stack capture (docs/performance.md).
      const listSpan = hotSpan("Accounts.list")
      const list = (signer: Address) => listSpan(Effect.orDie(rowsOf(signer)))

      // The next index, one create per signer at a time: a transaction-scoped advisory lock on
      // the signer, so concurrent creates each take the index after the last one committed
      // (racing for it and retrying let more than a few concurrent creates fail). Only the
      // primary's lock-free insert at sign-in can take index 0 first: then the next attempt
      // takes the next index.
      const createOnce = (signer: Address, label?: string) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`accounts:${signer}`}, 0))`
          const current = yield* rowsOf(signer)
          const index = current.length === 0 ? 0 : Math.max(...current.map((a) => a.index)) + 1
          const inserted = yield* insertAt(signer, index, label ?? `Account ${index + 1}`, index === 0 ? "primary" : "secondary")
          return inserted ? (yield* rowsOf(signer)).find((a) => a.index === index) : undefined
        }))

      const create = Effect.fn("Accounts.create")(function*(signer: Address, label?: string) {
        for (let attempt = 0; attempt < 3; attempt++) {
          const created = yield* createOnce(signer, label)
          if (created !== undefined) return created
        }
        return yield* Effect.die(new Error("could not allocate an account index"))
      }, Effect.orDie)

      const findById = Effect.fn("Accounts.findById")(function*(signer: Address, accountId: string) {
        const rows = yield* rowsOf(signer).pipe(Effect.orDie)
        const found = rows.find((a) => a.id === accountId)
        if (found === undefined) return yield* new NotFound({ message: `No account ${accountId} for this signer` })
        return found
      })

      const resolve = Effect.fn("Accounts.resolve")(function*(signer: Address, accountId?: string) {
        if (accountId !== undefined) return yield* findById(signer, accountId)
        const rows = yield* rowsOf(signer).pipe(Effect.orDie)
        const visible = rows.filter((a) => !a.hidden)
        if (visible.length === 0) return yield* new NotFound({ message: "This signer has no visible account" })
        return visible[0]!
      })

      return Accounts.of({ ensurePrimary, list, create, resolve, findById })
    })
  )
}
