/**
 * Every SQL statement of the payments feature (`x402_payments`, migration 0280), as named
 * functions with Schema-decoded rows; no rules. The reservation a payment holds is the
 * delegations feature's (DelegationRepo). Queries run on the captured `SqlClient`, so inside a
 * caller's transaction (the grant's row lock, the follower's pass) they join it. A database or
 * decoding failure is a defect.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

export const PaymentRow = Schema.Struct({
  id: Schema.String,
  chain_id: Schema.Number,
  payment_hash: Schema.String,
  delegation_id: Schema.String,
  account_id: Schema.String,
  reservation_id: Schema.NullOr(Schema.String),
  signer_address: Schema.NullOr(Schema.String),
  scheme: Schema.Literals(["exact", "upto"]),
  asset: Schema.String,
  pay_to: Schema.String,
  amount: Schema.String,
  facilitator: Schema.String,
  resource_url: Schema.NullOr(Schema.String),
  resource_description: Schema.NullOr(Schema.String),
  valid_before: Schema.Date,
  status: Schema.Literals(["authorized", "settled"]),
  settled_units: Schema.NullOr(Schema.String),
  tx_hash: Schema.NullOr(Schema.String),
  block_hash: Schema.NullOr(Schema.String),
  log_index: Schema.NullOr(Schema.Number),
  audit_event_id: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  settled_at: Schema.NullOr(Schema.Date)
})
export type PaymentRow = typeof PaymentRow.Type

/** As listed: an authorized payment past its deadline reads `expired`. */
export type ListedStatus = "authorized" | "settled" | "expired"

export interface NewPayment {
  readonly id: string
  readonly chainId: number
  readonly paymentHash: string
  readonly delegationId: string
  readonly accountId: string
  readonly reservationId: string | undefined
  readonly signerAddress: string | undefined
  readonly scheme: "exact" | "upto"
  readonly asset: string
  readonly payTo: string
  readonly amount: bigint
  readonly facilitator: string
  readonly resourceUrl: string | undefined
  readonly resourceDescription: string | undefined
  readonly validBefore: Date
}

export interface Settlement {
  readonly settledUnits: bigint
  readonly txHash: string
  readonly blockHash: string
  readonly logIndex: number
  readonly auditEventId: string | undefined
}

export class PaymentRepo extends Context.Service<PaymentRepo, {
  /** Records an authorized payment; the row as stored (one statement, no read after it). */
  insert(payment: NewPayment): Effect.Effect<PaymentRow>
  /** A payment recorded from the chain only (signed around the service): settled at once; false when it exists. */
  insertSettled(payment: NewPayment, settlement: Settlement): Effect.Effect<boolean>
  /** Locks a payment by its delegation hash (`FOR UPDATE`); inside a transaction. */
  lockByHash(chainId: number, paymentHash: string): Effect.Effect<PaymentRow | undefined>
  /** Records the settlement the chain showed (a settlement seen again, after a reorg, replaces it). */
  settle(id: string, settlement: Settlement): Effect.Effect<void>
  /** Locks the payments settled by the redemption at (block hash, log index) (`FOR UPDATE`); inside a transaction. */
  lockSettledAt(chainId: number, blockHash: string, logIndex: number): Effect.Effect<ReadonlyArray<PaymentRow>>
  /** A settlement whose block left the chain: the payment is authorized again (until its deadline), as before it settled. */
  unsettle(id: string): Effect.Effect<void>
  findById(id: string): Effect.Effect<PaymentRow | undefined>
  /** A grant's payments, newest first (at most 200). */
  listByDelegation(delegationId: string, status: ListedStatus | undefined): Effect.Effect<ReadonlyArray<PaymentRow>>
  /** Payments under every grant the signer owns or holds (one of its accounts, or its own key, is the delegate), newest first (at most 200). */
  listForSigner(signerAddress: string, status: ListedStatus | undefined): Effect.Effect<ReadonlyArray<PaymentRow>>
  /** Whether the signer owns the payment's grant or holds it. */
  visibleTo(id: string, signerAddress: string): Effect.Effect<boolean>
}>()("das/payments/PaymentRepo") {
  static readonly layer = Layer.effect(PaymentRepo, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const decode = Schema.decodeUnknownEffect(Schema.Array(PaymentRow))
  const rows = <E>(query: Effect.Effect<ReadonlyArray<unknown>, E>) => query.pipe(Effect.flatMap((r) => decode(r)), Effect.orDie)
  const run = <A, E>(query: Effect.Effect<A, E>): Effect.Effect<void> => query.pipe(Effect.orDie, Effect.asVoid)
  const statusIs = (status: ListedStatus | undefined) =>
    status === undefined
      ? sql`true`
      : status === "settled"
      ? sql`p.status = 'settled'`
      : status === "authorized"
      ? sql`p.status = 'authorized' AND p.valid_before > now()`
      : sql`p.status = 'authorized' AND p.valid_before <= now()`
  /** The grant is the signer's, or one of its accounts (on the grant's chain) or its own key is the delegate. */
  const reachable = (signerAddress: string) =>
    sql`(d.signer_address = ${signerAddress}
         OR d.delegatee_address = ${signerAddress}
         OR d.delegatee_address IN (SELECT address FROM accounts WHERE signer_address = ${signerAddress} AND chain_id = d.chain_id))`

  const values = (p: NewPayment) => ({
    id: p.id,
    chain_id: p.chainId,
    payment_hash: p.paymentHash,
    delegation_id: p.delegationId,
    account_id: p.accountId,
    reservation_id: p.reservationId ?? null,
    signer_address: p.signerAddress ?? null,
    scheme: p.scheme,
    asset: p.asset,
    pay_to: p.payTo,
    amount: p.amount.toString(),
    facilitator: p.facilitator,
    resource_url: p.resourceUrl ?? null,
    resource_description: p.resourceDescription ?? null,
    valid_before: p.validBefore
  })

  return PaymentRepo.of({
    insert: (p) => rows(sql`INSERT INTO x402_payments ${sql.insert({ ...values(p), status: "authorized" })} RETURNING *`).pipe(Effect.map((r) => r[0]!)),
    insertSettled: (p, s) =>
      sql`
        INSERT INTO x402_payments ${
        sql.insert({
          ...values(p),
          status: "settled",
          settled_units: s.settledUnits.toString(),
          tx_hash: s.txHash,
          block_hash: s.blockHash,
          log_index: s.logIndex,
          audit_event_id: s.auditEventId ?? null,
          settled_at: new Date()
        })
      }
        ON CONFLICT (chain_id, payment_hash) DO NOTHING RETURNING id`.pipe(Effect.orDie, Effect.map((r) => r.length > 0)),
    lockByHash: (chainId, paymentHash) =>
      rows(sql`SELECT * FROM x402_payments WHERE chain_id = ${chainId} AND payment_hash = ${paymentHash} FOR UPDATE`).pipe(
        Effect.map((r) => r[0])
      ),
    settle: (id, s) =>
      run(sql`
        UPDATE x402_payments SET status = 'settled', settled_units = ${s.settledUnits.toString()}, tx_hash = ${s.txHash},
          block_hash = ${s.blockHash}, log_index = ${s.logIndex}, audit_event_id = ${s.auditEventId ?? null}, settled_at = now()
        WHERE id = ${id}`),
    lockSettledAt: (chainId, blockHash, logIndex) =>
      rows(sql`SELECT * FROM x402_payments WHERE chain_id = ${chainId} AND block_hash = ${blockHash} AND log_index = ${logIndex}
               AND status = 'settled' FOR UPDATE`),
    unsettle: (id) =>
      run(sql`
        UPDATE x402_payments SET status = 'authorized', settled_units = NULL, tx_hash = NULL, block_hash = NULL,
          log_index = NULL, audit_event_id = NULL, settled_at = NULL
        WHERE id = ${id}`),
    findById: (id) => rows(sql`SELECT * FROM x402_payments WHERE id = ${id}`).pipe(Effect.map((r) => r[0])),
    listByDelegation: (delegationId, status) =>
      rows(sql`
        SELECT p.* FROM x402_payments p WHERE p.delegation_id = ${delegationId} AND ${statusIs(status)}
        ORDER BY p.created_at DESC, p.id LIMIT 200`),
    listForSigner: (signerAddress, status) =>
      rows(sql`
        SELECT p.* FROM x402_payments p JOIN delegations d ON d.id = p.delegation_id
        WHERE ${reachable(signerAddress)} AND ${statusIs(status)}
        ORDER BY p.created_at DESC, p.id LIMIT 200`),
    visibleTo: (id, signerAddress) =>
      sql`SELECT 1 FROM x402_payments p JOIN delegations d ON d.id = p.delegation_id
          WHERE p.id = ${id} AND ${reachable(signerAddress)}`.pipe(Effect.orDie, Effect.map((r) => r.length > 0))
  })
})
