/**
 * Every SQL statement of the permissions feature (`permission_approvals`, migration 0260): named
 * functions, rows Schema-decoded, no rules. Status moves are conditional updates, so two callers
 * racing on one approval move it once. A database failure is a defect (the edge answers it).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

/** A jsonb column written by this service from a typed value: checked for its shape, passed through as stored. */
const JsonArray = Schema.declare((u: unknown): u is ReadonlyArray<unknown> => Array.isArray(u), { identifier: "JsonArray" })

export const StoredStatus = Schema.Literals(["pending", "approving", "granted", "revoked", "rejected", "failed"])
export type StoredStatus = typeof StoredStatus.Type

export const ApprovalRow = Schema.Struct({
  id: Schema.String,
  signer_address: Schema.String,
  kind: Schema.Literals(["grant", "revoke"]),
  status: StoredStatus,
  items: JsonArray,
  permissions: Schema.NullOr(JsonArray),
  failure: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  expires_at: Schema.Date,
  decided_at: Schema.NullOr(Schema.Date),
  /** An agent's ask (migration 0540): the asking agent's signer; null for the owner's own requests. */
  requested_by: Schema.NullOr(Schema.String)
})
export type ApprovalRow = typeof ApprovalRow.Type

export interface NewApproval {
  readonly id: string
  readonly signerAddress: string
  readonly kind: "grant" | "revoke"
  readonly items: ReadonlyArray<unknown>
  readonly expiresAt: Date
  /** An agent's ask: the agent's signer address. */
  readonly requestedBy?: string
}

export class PermissionRepo extends Context.Service<PermissionRepo, {
  insert(approval: NewApproval): Effect.Effect<void>
  /**
   * An agent's ask stored unless that agent has one of this owner pending (checked and inserted
   * under one lock of the pair: two asks at once store one); the pending ask's id when not stored.
   */
  insertAsk(approval: NewApproval & { readonly requestedBy: string }): Effect.Effect<{ readonly pending: string } | undefined>
  /** The signer's approval (anyone else's does not exist). */
  find(id: string, signerAddress: string): Effect.Effect<ApprovalRow | undefined>
  /** An approval the agent asked for (`requested_by`), whoever's it is. */
  findAsked(id: string, agentAddress: string): Effect.Effect<ApprovalRow | undefined>
  /** The agent's ask of this owner that is still pending and unexpired, if any. */
  pendingAsk(agentAddress: string, ownerAddress: string): Effect.Effect<ApprovalRow | undefined>
  /** The signer's approvals, newest first. */
  list(signerAddress: string, limit: number): Effect.Effect<ReadonlyArray<ApprovalRow>>
  /** pending (not expired) or approving → approving: the owner's signatures are being used. */
  begin(id: string, signerAddress: string): Effect.Effect<ApprovalRow | undefined>
  /** approving → pending: nothing was enabled, the owner may sign again or reject. */
  reopen(id: string): Effect.Effect<void>
  setItems(id: string, items: ReadonlyArray<unknown>): Effect.Effect<void>
  /** pending or approving → a final status, once. */
  decide(
    id: string,
    status: "granted" | "revoked" | "failed",
    outcome: { readonly permissions?: ReadonlyArray<unknown>; readonly failure?: string }
  ): Effect.Effect<boolean>
  /** pending → rejected (the owner said no); `undefined` when it is not pending. */
  reject(id: string, signerAddress: string): Effect.Effect<ApprovalRow | undefined>
}>()("das/permissions/PermissionRepo") {
  static readonly layer = Layer.effect(
    PermissionRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const decode = Schema.decodeUnknownEffect(Schema.Array(ApprovalRow))
      const rows = <E>(query: Effect.Effect<ReadonlyArray<unknown>, E>) => query.pipe(Effect.flatMap((r) => decode(r)), Effect.orDie)
      const first = (r: ReadonlyArray<ApprovalRow>) => r[0]
      const run = <A, E>(query: Effect.Effect<A, E>) => query.pipe(Effect.orDie, Effect.asVoid)
      return PermissionRepo.of({
        insert: (a) =>
          run(sql`
            INSERT INTO permission_approvals (id, signer_address, kind, status, items, expires_at, requested_by)
            VALUES (${a.id}, ${a.signerAddress}, ${a.kind}, 'pending', ${JSON.stringify(a.items)}::jsonb, ${a.expiresAt}, ${a.requestedBy ?? null})`),
        insertAsk: (a) =>
          sql.withTransaction(Effect.gen(function*() {
            // The pair's lock outlives the check until the commit: a second ask at once reads the first.
            yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`permission-ask:${a.requestedBy}:${a.signerAddress}`}, 0))`
            const open = yield* sql<{ id: string }>`
              SELECT id FROM permission_approvals
              WHERE requested_by = ${a.requestedBy} AND signer_address = ${a.signerAddress} AND status = 'pending' AND expires_at > now()
              LIMIT 1`
            if (open[0] !== undefined) return { pending: open[0].id }
            yield* sql`
              INSERT INTO permission_approvals (id, signer_address, kind, status, items, expires_at, requested_by)
              VALUES (${a.id}, ${a.signerAddress}, ${a.kind}, 'pending', ${JSON.stringify(a.items)}::jsonb, ${a.expiresAt}, ${a.requestedBy})`
            return undefined
          })).pipe(Effect.orDie),
        findAsked: (id, agentAddress) =>
          rows(sql`SELECT * FROM permission_approvals WHERE id = ${id} AND requested_by = ${agentAddress}`).pipe(Effect.map(first)),
        pendingAsk: (agentAddress, ownerAddress) =>
          rows(sql`
            SELECT * FROM permission_approvals
            WHERE requested_by = ${agentAddress} AND signer_address = ${ownerAddress} AND status = 'pending' AND expires_at > now()
            ORDER BY created_at DESC LIMIT 1`).pipe(Effect.map(first)),
        find: (id, signerAddress) =>
          rows(sql`SELECT * FROM permission_approvals WHERE id = ${id} AND signer_address = ${signerAddress}`).pipe(Effect.map(first)),
        list: (signerAddress, limit) =>
          rows(sql`
            SELECT * FROM permission_approvals WHERE signer_address = ${signerAddress}
            ORDER BY created_at DESC, id LIMIT ${limit}`),
        begin: (id, signerAddress) =>
          rows(sql`
            UPDATE permission_approvals SET status = 'approving'
            WHERE id = ${id} AND signer_address = ${signerAddress}
              AND (status = 'approving' OR (status = 'pending' AND expires_at > now()))
            RETURNING *`).pipe(Effect.map(first)),
        reopen: (id) => run(sql`UPDATE permission_approvals SET status = 'pending' WHERE id = ${id} AND status = 'approving'`),
        setItems: (id, items) => run(sql`UPDATE permission_approvals SET items = ${JSON.stringify(items)}::jsonb WHERE id = ${id}`),
        decide: (id, status, outcome) =>
          rows(sql`
            UPDATE permission_approvals
            SET status = ${status}, decided_at = now(),
                permissions = ${outcome.permissions === undefined ? null : JSON.stringify(outcome.permissions)}::jsonb,
                failure = ${outcome.failure ?? null}
            WHERE id = ${id} AND status IN ('pending', 'approving')
            RETURNING *`).pipe(Effect.map((r) => r.length > 0)),
        reject: (id, signerAddress) =>
          rows(sql`
            UPDATE permission_approvals SET status = 'rejected', decided_at = now()
            WHERE id = ${id} AND signer_address = ${signerAddress} AND status = 'pending'
            RETURNING *`).pipe(Effect.map(first))
      })
    })
  )
}
