/**
 * A signer's smart accounts, and the scoping rule every account-scoped read uses:
 * no `accountId` → the signer's visible account with the lowest index; an
 * `accountId` that is unknown or another signer's → `NotFound`, never ignored.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { BadRequest, NotFound } from "../api/Errors.ts"
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

/** Which account a request means: by id, or the lowest visible index on a chain (default: the primary chain). */
export interface AccountScope {
  readonly accountId?: string | undefined
  readonly chainId?: number | undefined
}

export class Accounts extends Context.Service<Accounts, {
  /** The signer's account 0 on every served chain (first sign-in); answers the primary chain's. */
  readonly ensurePrimary: (signer: Address) => Effect.Effect<Account>
  /** Every account of the signer: by index, the primary chain first within an index. */
  readonly list: (signer: Address) => Effect.Effect<ReadonlyArray<Account>>
  /**
   * `list` for the signer of a live session (the token's hash), in ONE statement: the session
   * check and the accounts together (`GET /accounts`: one round trip fewer, as the relay's
   * lookup). Undefined when the session is unknown, revoked or expired.
   */
  readonly listForSession: (tokenHash: Uint8Array) => Effect.Effect<ReadonlyArray<Account> | undefined>
  /** The signer's accounts among `ids` (others' and unknown ids left out), in `list`'s order. */
  readonly listIn: (signer: Address, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Account>>
  /** The next index, on every served chain (same address where the factory allows) or on `chainId` alone. */
  readonly create: (signer: Address, label?: string, chainId?: number) => Effect.Effect<Account, BadRequest>
  /** The account a request is scoped to (see the module comment). */
  readonly resolve: (signer: Address, scope?: AccountScope | string) => Effect.Effect<Account, NotFound | BadRequest>
  /**
   * The accounts a read spans: the one `accountId` names; else, on every served chain (or on
   * `chainId`), the lowest visible index.
   */
  readonly resolveAll: (signer: Address, scope?: AccountScope) => Effect.Effect<ReadonlyArray<Account>, NotFound | BadRequest>
  readonly findById: (signer: Address, accountId: string) => Effect.Effect<Account, NotFound>
}>()("das/accounts/Accounts") {
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const factory = yield* AccountFactory
      const chainOrder = new Map(factory.chains.map((c, i) => [c.chainId, i]))
      const primaryChain = factory.chains[0]!.chainId
      const knownChain = (chainId: number) => {
        if (chainOrder.has(chainId)) return Effect.void
        return Effect.fail(
          new BadRequest({
            message: `Chain ${chainId} is not served here; served: ${factory.chains.map((c) => `${c.chainId} (${c.name})`).join(", ")}`,
            details: { chainId, served: factory.chains.map((c) => ({ chainId: c.chainId, name: c.name })) }
          })
        )
      }

      const listRows = SqlSchema.findAll({
        Request: Schema.String,
        Result: AccountRow,
        execute: (signer) => sql`SELECT * FROM accounts WHERE signer_address = ${signer} ORDER BY idx, chain_id`
      })

      const listInRows = SqlSchema.findAll({
        Request: Schema.Struct({ signer: Schema.String, ids: Schema.Array(Schema.String) }),
        Result: AccountRow,
        execute: ({ ids, signer }) => sql`SELECT * FROM accounts WHERE signer_address = ${signer} AND id IN ${sql.in(ids)}`
      })

      const insertAt = (signer: Address, chainId: number, index: number, label: string, purpose: string) =>
        Effect.gen(function*() {
          const address = yield* factory.counterfactualAddress(chainId, signer, index)
          const rows = yield* sql`
            INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
            VALUES (${`acc_${crypto.randomUUID()}`}, ${signer}, ${index}, ${label}, ${normalizeAddress(address)},
                    ${chainId}, ${factory.accountType}, ${purpose}, ${"counterfactual"}, now())
            ON CONFLICT DO NOTHING
            RETURNING *`
          return rows.length > 0
        })

      // By index, then in the served chains' order (the primary first); chains no longer served last.
      const order = (a: Account, b: Account) =>
        a.index - b.index || (chainOrder.get(a.chainId) ?? 1e9) - (chainOrder.get(b.chainId) ?? 1e9)
      const rowsOf = (signer: Address) => listRows(signer).pipe(Effect.map((rows) => rows.map(toAccount).sort(order)))

      const ensurePrimary = Effect.fn("Accounts.ensurePrimary")(function*(signer: Address) {
        yield* Effect.forEach(factory.chains, (c) => insertAt(signer, c.chainId, 0, "Primary", "primary"), { concurrency: "unbounded" })
        const rows = yield* rowsOf(signer)
        return rows.find((a) => a.index === 0 && a.chainId === primaryChain) ?? rows[0]!
      }, Effect.orDie)

      // A hot read: a span, without `Effect.fn`'s per-call stack capture (docs/performance.md).
      const listSpan = hotSpan("Accounts.list")
      const list = (signer: Address) => listSpan(Effect.orDie(rowsOf(signer)))
      const decodeRows = Schema.decodeUnknownEffect(Schema.Array(AccountRow))
      const listForSession = (tokenHash: Uint8Array) =>
        listSpan(
          sql<{ readonly session_signer: string; readonly id: string | null }>`
            SELECT s.signer_address AS session_signer, a.*
            FROM sessions s
            LEFT JOIN accounts a ON a.signer_address = s.signer_address
            WHERE s.token_hash = ${tokenHash} AND s.revoked_at IS NULL AND s.expires_at > now()
            ORDER BY a.idx, a.chain_id`.pipe(
            Effect.flatMap((rows) =>
              rows.length === 0
                ? Effect.succeed(undefined)
                : Effect.map(decodeRows(rows[0]!.id === null ? [] : rows), (accounts) => accounts.map(toAccount).sort(order))
            ),
            Effect.orDie
          )
        )
      const listIn = (signer: Address, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed([])
          : listInRows({ signer, ids }).pipe(Effect.map((rows) => rows.map(toAccount).sort(order)), Effect.orDie)

      // The next index, one create per signer at a time: a transaction-scoped advisory lock on
      // the signer, so concurrent creates each take the index after the last one committed
      // (racing for it and retrying let more than a few concurrent creates fail). Only the
      // primary's lock-free insert at sign-in can take index 0 first: then the next attempt
      // takes the next index.
      const createOnce = (signer: Address, label: string | undefined, chainIds: ReadonlyArray<number>) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`accounts:${signer}`}, 0))`
          const current = yield* rowsOf(signer)
          const index = current.length === 0 ? 0 : Math.max(...current.map((a) => a.index)) + 1
          const labelled = label ?? `Account ${index + 1}`
          const purpose = index === 0 ? "primary" : "secondary"
          let inserted = true
          for (const chainId of chainIds) inserted = (yield* insertAt(signer, chainId, index, labelled, purpose)) && inserted
          return inserted ? (yield* rowsOf(signer)).find((a) => a.index === index && a.chainId === chainIds[0]) : undefined
        }))

      const create = Effect.fn("Accounts.create")(function*(signer: Address, label?: string, chainId?: number) {
        if (chainId !== undefined) yield* knownChain(chainId)
        const chainIds = chainId === undefined ? factory.chains.map((c) => c.chainId) : [chainId]
        for (let attempt = 0; attempt < 3; attempt++) {
          const created = yield* createOnce(signer, label, chainIds).pipe(Effect.orDie)
          if (created !== undefined) return created
        }
        return yield* Effect.die(new Error("could not allocate an account index"))
      })

      const findById = Effect.fn("Accounts.findById")(function*(signer: Address, accountId: string) {
        const rows = yield* rowsOf(signer).pipe(Effect.orDie)
        const found = rows.find((a) => a.id === accountId)
        // The id is not echoed: a caller may pass one it read elsewhere (another owner's), and an error names no one else's.
        if (found === undefined) return yield* new NotFound({ message: "No such account of this signer", details: { field: "accountId" } })
        return found
      })

      const lowestVisible = (rows: ReadonlyArray<Account>, chainId: number) => rows.find((a) => !a.hidden && a.chainId === chainId)

      const resolve = Effect.fn("Accounts.resolve")(function*(signer: Address, scope?: AccountScope | string) {
        const { accountId, chainId } = typeof scope === "string" ? { accountId: scope, chainId: undefined } : scope ?? {}
        if (accountId !== undefined) {
          const account = yield* findById(signer, accountId)
          if (chainId !== undefined && account.chainId !== chainId) {
            return yield* new BadRequest({
              message: `Account ${accountId} is on chain ${account.chainId}, not ${chainId}`,
              details: { accountId, chainId: account.chainId }
            })
          }
          return account
        }
        const chain = chainId ?? primaryChain
        yield* knownChain(chain)
        const found = lowestVisible(yield* rowsOf(signer).pipe(Effect.orDie), chain)
        if (found === undefined) return yield* new NotFound({ message: `This signer has no visible account on chain ${chain}` })
        return found
      })

      const resolveAll = Effect.fn("Accounts.resolveAll")(function*(signer: Address, scope: AccountScope = {}) {
        if (scope.accountId !== undefined) return [yield* resolve(signer, scope)]
        if (scope.chainId !== undefined) yield* knownChain(scope.chainId)
        const rows = yield* rowsOf(signer).pipe(Effect.orDie)
        const chainIds = scope.chainId === undefined ? factory.chains.map((c) => c.chainId) : [scope.chainId]
        const found = chainIds.flatMap((c) => lowestVisible(rows, c) ?? [])
        if (found.length === 0) return yield* new NotFound({ message: "This signer has no visible account" })
        return found
      })

      return Accounts.of({ ensurePrimary, list, listForSession, listIn, create, resolve, resolveAll, findById })
    })
  )
}
