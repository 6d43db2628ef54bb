/**
 * Approval requests' SQL (migration 0270): the request rows, the approvals given, who may see
 * them. Status changes are conditional UPDATEs on the row locked by `lock` (the caller's
 * transaction): two approvals, or an approval and a denial, at once settle one after the other.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

export const ApprovalRow = Schema.Struct({
  id: Schema.String,
  delegation_id: Schema.String,
  account_id: Schema.String,
  owner_signer: Schema.String,
  chain_id: Schema.Number,
  permission_id: Schema.String,
  delegator_address: Schema.String,
  delegate_address: Schema.String,
  requested_by: Schema.String,
  reservation_id: Schema.String,
  share_key: Schema.String,
  token_address: Schema.String,
  token_symbol: Schema.String,
  token_decimals: Schema.Number,
  units: Schema.String,
  recipient: Schema.String,
  recipient_name: Schema.NullOr(Schema.String),
  gas_token: Schema.NullOr(Schema.Literals(["USDC", "USDT"])),
  call_data: Schema.String,
  enforcer: Schema.String,
  delegation_manager: Schema.String,
  required: Schema.Number,
  approvers: Schema.Array(Schema.String),
  nonce: Schema.String,
  deadline: Schema.Date,
  summary: Schema.String,
  status: Schema.Literals(["pending", "approved", "denied", "expired", "executed"]),
  created_at: Schema.Date,
  approved_at: Schema.NullOr(Schema.Date),
  denied_at: Schema.NullOr(Schema.Date),
  denied_by: Schema.NullOr(Schema.String),
  deny_reason: Schema.NullOr(Schema.String),
  expired_at: Schema.NullOr(Schema.Date),
  expired_reason: Schema.NullOr(Schema.String),
  built_at: Schema.NullOr(Schema.Date),
  executed_at: Schema.NullOr(Schema.Date),
  tx_hash: Schema.NullOr(Schema.String),
  operation_id: Schema.NullOr(Schema.String)
})
export type ApprovalRow = typeof ApprovalRow.Type

export const SignatureRow = Schema.Struct({
  approver: Schema.String,
  signature: Schema.String,
  created_at: Schema.Date
})
export type SignatureRow = typeof SignatureRow.Type

export type NewApproval = Omit<
  ApprovalRow,
  | "status"
  | "created_at"
  | "approved_at"
  | "denied_at"
  | "denied_by"
  | "deny_reason"
  | "expired_at"
  | "expired_reason"
  | "built_at"
  | "executed_at"
  | "tx_hash"
  | "operation_id"
>

/** Who a signer is to requests: its own address and its accounts' (lowercase). */
export type Parties = ReadonlyArray<string>

export class ApprovalRepo extends Context.Service<ApprovalRepo, {
  /** Inserts a pending request; `false` when an identical action already has one (its share key). */
  insert(row: NewApproval): Effect.Effect<boolean>
  findPending(shareKey: string): Effect.Effect<ApprovalRow | undefined>
  find(id: string): Effect.Effect<ApprovalRow | undefined>
  /** The row, locked for the caller's transaction. */
  lock(id: string): Effect.Effect<ApprovalRow | undefined>
  /** The request when the signer is its owner, one of its approvers or its agent; else `undefined`. */
  visible(id: string, signer: string, mine: Parties): Effect.Effect<ApprovalRow | undefined>
  list(signer: string, mine: Parties, status: string | undefined): Effect.Effect<ReadonlyArray<ApprovalRow>>
  signatures(id: string): Effect.Effect<ReadonlyArray<SignatureRow>>
  addSignature(id: string, approver: string, signature: string, submittedBy: string): Effect.Effect<boolean>
  markApproved(id: string): Effect.Effect<void>
  markDenied(id: string, by: string, reason: string): Effect.Effect<void>
  markExpired(id: string, reason: "deadline" | "grant_revoked"): Effect.Effect<void>
  markBuilt(id: string, reservationId: string): Effect.Effect<void>
  markExecuted(id: string, txHash: string, operationId: string): Effect.Effect<boolean>
  /** Executed around the relay: the chain spent its approvals' nonce (no transaction known here). */
  markSpent(id: string): Effect.Effect<void>
  /** Open requests past their deadline or of a revoked grant (oldest first). */
  due(limit: number): Effect.Effect<ReadonlyArray<string>>
  /** Whether the request's grant was revoked. */
  grantRevoked(delegationId: string): Effect.Effect<boolean>
  /** The signer's own address and its accounts' addresses (lowercase). */
  partiesOf(signer: string): Effect.Effect<Parties>
  /** The grant's named redeemers (its policy's `redeemers.addresses`; none for the delegate alone). */
  redeemersOf(delegationId: string): Effect.Effect<ReadonlyArray<string>>
  /** The signers behind `addresses` (a key's own address, or the signer of an account at one). */
  signersOf(addresses: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>>
  /** Whether one of the owner's grants names `approver` in its approval rule. */
  namesApprover(owner: string, approver: string): Effect.Effect<boolean>
  /** The owner's approver contacts: live webhook endpoints under `approver:<owner>:…` identities (Contacts.ts). */
  contactsOf(owner: string): Effect.Effect<ReadonlyArray<{ readonly id: string; readonly identity: string; readonly url: string; readonly created_at: Date }>>
  /** Which of `identities` have a live webhook endpoint. */
  liveIdentities(identities: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>>
}>()("das/approvals/ApprovalRepo") {
  static readonly layer = Layer.effect(ApprovalRepo, make())
}

function make() {
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeAll = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
      const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
      return <E>(query: Effect.Effect<ReadonlyArray<unknown>, E>): Effect.Effect<ReadonlyArray<S["Type"]>> =>
        query.pipe(Effect.flatMap((rows) => decode(rows)), Effect.orDie) as Effect.Effect<ReadonlyArray<S["Type"]>>
    }
    const rows = decodeAll(ApprovalRow)
    const sigs = decodeAll(SignatureRow)
    const strings = decodeAll(Schema.Struct({ value: Schema.String }))
    const run = <A, E>(query: Effect.Effect<A, E>): Effect.Effect<void> => query.pipe(Effect.orDie, Effect.asVoid)
    const first = <A>(xs: ReadonlyArray<A>) => xs[0]
    // numeric columns read as text: exact, whatever their size.
    const select = sql.literal("*, units::text AS units, nonce::text AS nonce")
    const canSee = (signer: string, mine: Parties) =>
      sql`(owner_signer = ${signer} OR approvers && string_to_array(${mine.join(",")}, ',')
           OR delegate_address IN ${sql.in(mine as Array<string>)} OR requested_by = ${signer})`

    return ApprovalRepo.of({
      insert: (r) =>
        sql`INSERT INTO approval_requests (id, delegation_id, account_id, owner_signer, chain_id, permission_id,
              delegator_address, delegate_address, requested_by, reservation_id, share_key, token_address, token_symbol,
              token_decimals, units, recipient, recipient_name, gas_token, call_data, enforcer, delegation_manager,
              required, approvers, nonce, deadline, summary)
            VALUES (${r.id}, ${r.delegation_id}, ${r.account_id}, ${r.owner_signer}, ${r.chain_id}, ${r.permission_id},
              ${r.delegator_address}, ${r.delegate_address}, ${r.requested_by}, ${r.reservation_id}, ${r.share_key},
              ${r.token_address}, ${r.token_symbol}, ${r.token_decimals}, ${r.units}, ${r.recipient}, ${r.recipient_name},
              ${r.gas_token}, ${r.call_data}, ${r.enforcer}, ${r.delegation_manager}, ${r.required},
              string_to_array(${r.approvers.join(",")}, ','), ${r.nonce}, ${r.deadline}, ${r.summary})
            ON CONFLICT (share_key) WHERE status = 'pending' DO NOTHING
            RETURNING id`.pipe(Effect.map((x) => x.length === 1), Effect.orDie),
      findPending: (shareKey) =>
        rows(sql`SELECT ${select} FROM approval_requests WHERE share_key = ${shareKey} AND status = 'pending'`).pipe(Effect.map(first)),
      find: (id) => rows(sql`SELECT ${select} FROM approval_requests WHERE id = ${id}`).pipe(Effect.map(first)),
      lock: (id) => rows(sql`SELECT ${select} FROM approval_requests WHERE id = ${id} FOR UPDATE`).pipe(Effect.map(first)),
      visible: (id, signer, mine) =>
        rows(sql`SELECT ${select} FROM approval_requests WHERE id = ${id} AND ${canSee(signer, mine)}`).pipe(Effect.map(first)),
      list: (signer, mine, status) =>
        rows(sql`SELECT ${select} FROM approval_requests
                 WHERE ${canSee(signer, mine)} ${status === undefined ? sql`` : sql`AND status = ${status}`}
                 ORDER BY created_at DESC LIMIT 200`),
      signatures: (id) =>
        sigs(sql`SELECT approver, signature, created_at FROM approval_signatures WHERE request_id = ${id} ORDER BY created_at, approver`),
      addSignature: (id, approver, signature, submittedBy) =>
        sql`INSERT INTO approval_signatures (request_id, approver, signature, submitted_by)
            VALUES (${id}, ${approver}, ${signature}, ${submittedBy})
            ON CONFLICT DO NOTHING RETURNING approver`.pipe(Effect.map((x) => x.length === 1), Effect.orDie),
      markApproved: (id) =>
        run(sql`UPDATE approval_requests SET status = 'approved', approved_at = now() WHERE id = ${id} AND status = 'pending'`),
      markDenied: (id, by, reason) =>
        run(sql`UPDATE approval_requests SET status = 'denied', denied_at = now(), denied_by = ${by}, deny_reason = ${reason}
                WHERE id = ${id} AND status = 'pending'`),
      markExpired: (id, reason) =>
        run(sql`UPDATE approval_requests SET status = 'expired', expired_at = now(), expired_reason = ${reason}
                WHERE id = ${id} AND status IN ('pending', 'approved')`),
      markBuilt: (id, reservationId) =>
        run(sql`UPDATE approval_requests SET built_at = coalesce(built_at, now()), reservation_id = ${reservationId}
                WHERE id = ${id} AND status = 'approved'`),
      markExecuted: (id, txHash, operationId) =>
        sql`UPDATE approval_requests SET status = 'executed', executed_at = now(), tx_hash = ${txHash}, operation_id = ${operationId}
            WHERE id = ${id} AND status IN ('approved', 'expired') RETURNING id`.pipe(Effect.map((x) => x.length === 1), Effect.orDie),
      markSpent: (id) =>
        run(sql`UPDATE approval_requests SET status = 'executed', executed_at = now() WHERE id = ${id} AND status IN ('pending', 'approved')`),
      due: (limit) =>
        strings(sql`SELECT r.id AS value FROM approval_requests r
                    WHERE r.status IN ('pending', 'approved')
                      AND (r.deadline < now() OR EXISTS (SELECT 1 FROM delegations d WHERE d.id = r.delegation_id AND d.status = 'revoked'))
                    ORDER BY r.deadline LIMIT ${limit}`)
          .pipe(Effect.map((xs) => xs.map((x) => x.value))),
      grantRevoked: (delegationId) =>
        strings(sql`SELECT id AS value FROM delegations WHERE id = ${delegationId} AND status = 'revoked'`)
          .pipe(Effect.map((xs) => xs.length > 0)),
      partiesOf: (signer) =>
        strings(sql`SELECT DISTINCT address AS value FROM accounts WHERE signer_address = ${signer}`)
          .pipe(Effect.map((xs) => [signer, ...xs.map((x) => x.value)])),
      redeemersOf: (delegationId) =>
        strings(sql`SELECT jsonb_array_elements_text(COALESCE(policy_set -> 'redeemers' -> 'addresses', '[]'::jsonb)) AS value
                    FROM delegations WHERE id = ${delegationId}`).pipe(Effect.map((xs) => xs.map((x) => x.value.toLowerCase()))),
      signersOf: (addresses) =>
        addresses.length === 0 ? Effect.succeed([]) : strings(sql`
          SELECT DISTINCT signer_address AS value FROM accounts WHERE address IN ${sql.in(addresses as Array<string>)}
          UNION SELECT DISTINCT signer_address FROM accounts WHERE signer_address IN ${sql.in(addresses as Array<string>)}`)
          .pipe(Effect.map((xs) => xs.map((x) => x.value))),
      namesApprover: (owner, approver) =>
        Effect.map(
          Effect.orDie(sql`SELECT 1 FROM delegations WHERE signer_address = ${owner}
                           AND (policy_set -> 'approval' -> 'approvers') ? ${approver} LIMIT 1`),
          (rows) => rows.length > 0
        ),
      contactsOf: (owner) =>
        Effect.orDie(sql<{ id: string; identity: string; url: string; created_at: Date }>`
          SELECT id, signer_address AS identity, url, created_at FROM webhook_endpoints
          WHERE signer_address LIKE ${`approver:${owner}:%`} AND deleted_at IS NULL ORDER BY created_at, id`),
      liveIdentities: (identities) =>
        identities.length === 0 ? Effect.succeed([]) : Effect.map(
          Effect.orDie(sql<{ value: string }>`SELECT DISTINCT signer_address AS value FROM webhook_endpoints
                                              WHERE signer_address IN ${sql.in(identities as Array<string>)} AND deleted_at IS NULL`),
          (rows) => rows.map((r) => r.value)
        )
    })
  })
}
