/**
 * Grant change requests' SQL (migration 0300; docs/approvals.md "Asking for more"). Status
 * changes are conditional UPDATEs on the row `lock` holds (the caller's transaction), so two
 * accepts, or an accept and a decline, at once settle one after the other. One open request
 * per grant (a partial unique index): `insert` answers false when one is open.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { GrantChanges } from "../domain/Approvals.ts"

interface ChangeLine {
  readonly field: string
  readonly from: string
  readonly to: string
  readonly text: string
}

const Json = <A extends object>(identifier: string) =>
  Schema.declare((u: unknown): u is A => typeof u === "object" && u !== null, { identifier })

export const ChangeRow = Schema.Struct({
  id: Schema.String,
  delegation_id: Schema.String,
  account_id: Schema.String,
  owner_signer: Schema.String,
  chain_id: Schema.Number,
  delegate_address: Schema.String,
  requested_by: Schema.String,
  changes: Json<GrantChanges>("GrantChangesJson"),
  diff: Json<ReadonlyArray<ChangeLine>>("ChangeLinesJson"),
  reason: Schema.String,
  summary: Schema.String,
  status: Schema.Literals(["pending", "accepting", "accepted", "declined", "expired"]),
  deadline: Schema.Date,
  created_at: Schema.Date,
  build_id: Schema.NullOr(Schema.String),
  build_hash: Schema.NullOr(Schema.String),
  new_delegation_id: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(Schema.Date),
  decided_by: Schema.NullOr(Schema.String),
  decline_reason: Schema.NullOr(Schema.String),
  expired_reason: Schema.NullOr(Schema.String)
})
export type ChangeRow = typeof ChangeRow.Type

export interface NewChange {
  readonly id: string
  readonly delegation_id: string
  readonly account_id: string
  readonly owner_signer: string
  readonly chain_id: number
  readonly delegate_address: string
  readonly requested_by: string
  readonly changes: GrantChanges
  readonly diff: ReadonlyArray<ChangeLine>
  readonly reason: string
  readonly summary: string
  readonly deadline: Date
}

export class ChangeRepo extends Context.Service<ChangeRepo, {
  /** False when the grant already has an open request. */
  insert(row: NewChange): Effect.Effect<boolean>
  find(id: string): Effect.Effect<ChangeRow | undefined>
  lock(id: string): Effect.Effect<ChangeRow | undefined>
  /** The grant's open (pending or accepting) request. */
  findOpen(delegationId: string): Effect.Effect<ChangeRow | undefined>
  /** A request its owner, its agent, or a signer of the agent's account (`parties`: the caller's addresses) may see. */
  visible(id: string, parties: ReadonlyArray<string>): Effect.Effect<ChangeRow | undefined>
  list(parties: ReadonlyArray<string>, status: string | undefined): Effect.Effect<ReadonlyArray<ChangeRow>>
  /** The owner's latest replacement build of a pending request. */
  setBuild(id: string, buildHash: string): Effect.Effect<void>
  /** pending → accepting, bound to the build being relayed. */
  markAccepting(id: string): Effect.Effect<boolean>
  /** accepting → pending (its replacement did not execute). */
  reopen(id: string): Effect.Effect<void>
  markAccepted(id: string, by: string, newDelegationId: string): Effect.Effect<boolean>
  markDeclined(id: string, by: string, reason: string): Effect.Effect<boolean>
  markExpired(id: string, reason: "deadline" | "grant_revoked"): Effect.Effect<boolean>
  /** Ids of open requests past their deadline or whose grant is no longer active. */
  due(limit: number): Effect.Effect<ReadonlyArray<string>>
  grantStatus(delegationId: string): Effect.Effect<string | undefined>
}>()("das/approvals/ChangeRepo") {
  static readonly layer = Layer.effect(ChangeRepo, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = (q: Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
      q.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(ChangeRow))), Effect.orDie)
    const one = (q: Effect.Effect<ReadonlyArray<unknown>, unknown>) => Effect.map(rows(q), (r) => r[0])
    const changed = (q: Effect.Effect<ReadonlyArray<unknown>, unknown>) => Effect.map(Effect.orDie(q), (r) => r.length > 0)
    return ChangeRepo.of({
      insert: (r) =>
        changed(sql`
          INSERT INTO grant_change_requests (id, delegation_id, account_id, owner_signer, chain_id, delegate_address, requested_by,
                                             changes, diff, reason, summary, deadline)
          VALUES (${r.id}, ${r.delegation_id}, ${r.account_id}, ${r.owner_signer}, ${r.chain_id}, ${r.delegate_address}, ${r.requested_by},
                  ${JSON.stringify(r.changes)}::jsonb, ${JSON.stringify(r.diff)}::jsonb, ${r.reason}, ${r.summary}, ${r.deadline})
          ON CONFLICT DO NOTHING RETURNING id`),
      find: (id) => one(sql`SELECT * FROM grant_change_requests WHERE id = ${id}`),
      lock: (id) => one(sql`SELECT * FROM grant_change_requests WHERE id = ${id} FOR UPDATE`),
      findOpen: (delegationId) =>
        one(sql`SELECT * FROM grant_change_requests WHERE delegation_id = ${delegationId} AND status IN ('pending', 'accepting')`),
      visible: (id, parties) =>
        one(sql`SELECT * FROM grant_change_requests WHERE id = ${id}
                AND (owner_signer IN ${sql.in(parties as Array<string>)} OR requested_by IN ${sql.in(parties as Array<string>)}
                     OR delegate_address IN ${sql.in(parties as Array<string>)})`),
      list: (parties, status) =>
        rows(sql`SELECT * FROM grant_change_requests
                 WHERE (owner_signer IN ${sql.in(parties as Array<string>)} OR requested_by IN ${sql.in(parties as Array<string>)}
                        OR delegate_address IN ${sql.in(parties as Array<string>)})
                 ${status === undefined ? sql`` : sql`AND status = ${status}`}
                 ORDER BY created_at DESC LIMIT 200`),
      setBuild: (id, buildHash) =>
        Effect.orDie(sql`UPDATE grant_change_requests SET build_hash = ${buildHash} WHERE id = ${id} AND status = 'pending'`).pipe(Effect.asVoid),
      markAccepting: (id) => changed(sql`UPDATE grant_change_requests SET status = 'accepting' WHERE id = ${id} AND status = 'pending' RETURNING id`),
      reopen: (id) => Effect.orDie(sql`UPDATE grant_change_requests SET status = 'pending' WHERE id = ${id} AND status = 'accepting'`).pipe(Effect.asVoid),
      markAccepted: (id, by, newDelegationId) =>
        changed(sql`UPDATE grant_change_requests SET status = 'accepted', decided_at = now(), decided_by = ${by}, new_delegation_id = ${newDelegationId}
                    WHERE id = ${id} AND status IN ('pending', 'accepting') RETURNING id`),
      markDeclined: (id, by, reason) =>
        changed(sql`UPDATE grant_change_requests SET status = 'declined', decided_at = now(), decided_by = ${by}, decline_reason = ${reason}
                    WHERE id = ${id} AND status = 'pending' RETURNING id`),
      markExpired: (id, reason) =>
        changed(sql`UPDATE grant_change_requests SET status = 'expired', decided_at = now(), expired_reason = ${reason}
                    WHERE id = ${id} AND status = 'pending' RETURNING id`),
      due: (limit) =>
        Effect.map(
          Effect.orDie(sql<{ id: string }>`
            SELECT c.id FROM grant_change_requests c JOIN delegations d ON d.id = c.delegation_id
            WHERE c.status IN ('pending', 'accepting') AND (c.deadline <= now() OR d.status <> 'active')
            ORDER BY c.deadline LIMIT ${limit}`),
          (r) => r.map((x) => x.id)
        ),
      grantStatus: (delegationId) =>
        Effect.map(Effect.orDie(sql<{ status: string }>`SELECT status FROM delegations WHERE id = ${delegationId}`), (r) => r[0]?.status)
    })
  }))
}
