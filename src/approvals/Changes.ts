/**
 * Asking for more (issue 25, item 3; docs/approvals.md "Asking for more"): an agent asks its
 * owner to change its grant (a larger budget, per-action maximum or count, a later expiry, new
 * recipients) with a reason; the owner reads the plain-language difference, builds the ONE
 * replacement operation (src/delegations/Replace.ts: old grant disabled, its spend guarded and
 * carried over, the new grant enabled), signs it and accepts; or declines.
 *
 * Exactly once: one open request per grant; every status change runs on the request's locked row
 * with a conditional UPDATE. An accept binds the request to the build it relays (`accepting`);
 * two accepts of that build meet in `POST /delegations`' own idempotence (one enable), and the
 * request is `accepted` once the new grant is active. Whatever the service does, the chain
 * enables the replacement only if the old grant is still enabled and its spend unchanged.
 */
import { requesterWords } from "../domain/OutsideText.ts"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { Address } from "viem"
import { BadRequest, Conflict, NotFound } from "../api/Errors.ts"
import { AuditChain, type AuditStatus } from "../audit/AuditChain.ts"
import { AuditLive } from "../audit/Recorder.ts"
import { Chains } from "../chain/Chains.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import { Delegations } from "../delegations/Delegations.ts"
import type { CreateInput } from "../delegations/Enable.ts"
import type { Signer } from "../delegations/Reads.ts"
import type { GrantChangeRequest, GrantChanges } from "../domain/Approvals.ts"
import { Notifications, type Tone } from "../notifications/Notifications.ts"
import { ApprovalRepo } from "./ApprovalRepo.ts"
import { ApprovalSweep, ApprovalTtl } from "./Approvals.ts"
import { ChangeRepo, type ChangeRow } from "./ChangeRepo.ts"

const lower = (s: string) => s.toLowerCase()

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const transaction = transactionRetryingConflicts(sql)
  const repo = yield* ChangeRepo
  const approvalRepo = yield* ApprovalRepo
  const delegations = yield* Delegations
  const chains = yield* Chains
  const audit = yield* AuditChain
  const notifications = yield* Notifications
  const ttlMs = Duration.toMillis(yield* ApprovalTtl)
  const d = { parties: approvalRepo, ttlMs }
  const inTransaction = <A, E, R>(self: Effect.Effect<A, E, R>) => transaction(self).pipe(Effect.orDie)

  const toWire = (row: ChangeRow): GrantChangeRequest => ({
    id: row.id,
    status: row.status,
    summary: row.summary,
    delegationId: row.delegation_id,
    chain: chains.nameOf(row.chain_id),
    chainId: row.chain_id,
    agent: row.delegate_address,
    reason: row.reason,
    changes: row.changes,
    diff: row.diff,
    deadline: row.deadline.toISOString(),
    createdAt: row.created_at.toISOString(),
    ...(row.decided_at === null || row.decided_by === null
      ? {}
      : { decision: { by: row.decided_by, at: row.decided_at.toISOString(), ...(row.decline_reason === null ? {} : { reason: row.decline_reason }) } }),
    ...(row.new_delegation_id === null ? {} : { newDelegationId: row.new_delegation_id }),
    ...(row.status === "expired" && row.decided_at !== null
      ? { expiry: { reason: row.expired_reason === "grant_revoked" ? "grant_revoked" as const : "deadline" as const, at: row.decided_at.toISOString() } }
      : {}),
    link: `approvals/changes/${row.id}`
  })
  const log = (row: ChangeRow, step: string, status: AuditStatus, actor: string, reason?: string, delegationId?: string) =>
    audit.append({
      accountId: row.account_id,
      declineId: `${row.id}:${step}`,
      actor,
      action: "grant_change_request",
      chain: chains.nameOf(row.chain_id),
      chainId: row.chain_id,
      status,
      delegationId: delegationId ?? row.delegation_id,
      ...(reason === undefined ? {} : { declineReason: reason })
    }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))

  const tell = (signer: string, row: ChangeRow, tone: Tone, title: string, body: string) =>
    notifications.notify(signer as Address, {
      tone,
      title,
      body,
      relatedType: "grant_change_request",
      relatedId: row.id,
      action: { label: "Review request", target: `approvals/changes/${row.id}` }
    })

  /** Inside the caller's transaction on the locked row: an accept whose replacement settled, a deadline passed, a grant gone. */
  const settleLocked = (row: ChangeRow) =>
    Effect.gen(function*() {
      let status = row.status
      if (status === "accepting" && row.build_hash !== null) {
        const outcome = yield* delegations.enableOutcome(row.owner_signer, row.build_hash)
        if (outcome !== undefined && (outcome.status === "active" || outcome.status === "revoked")) {
          if (yield* repo.markAccepted(row.id, row.owner_signer, outcome.id)) {
            yield* log(row, "accepted", "accepted", row.owner_signer, undefined, outcome.id)
            yield* tell(row.requested_by, row, "success", "Grant change accepted", `Your owner accepted the change: the new grant is ${outcome.id}.`)
          }
          return true
        }
        // Still on its way, or (not stored yet) an accept in flight: left to it, until the deadline.
        if (outcome?.status === "pending" || (outcome === undefined && row.deadline.getTime() > Date.now())) return false
        // It never executed: the request is open again.
        yield* repo.reopen(row.id)
        status = "pending"
      }
      if (status !== "pending") return false
      const grant = yield* repo.grantStatus(row.delegation_id)
      const reason = row.deadline.getTime() <= Date.now() ? "deadline" as const : grant !== "active" ? "grant_revoked" as const : undefined
      if (reason === undefined) return status !== row.status
      if (yield* repo.markExpired(row.id, reason)) {
        yield* log(row, "expired", "expired", "system", reason)
        const why = reason === "deadline" ? "it was not accepted in time" : "the grant was revoked"
        yield* tell(row.requested_by, row, "info", "Grant change request expired", `Your request to change delegation ${row.delegation_id} expired: ${why}.`)
      }
      return true
    })

  const settle = (id: string) => inTransaction(Effect.flatMap(repo.lock(id), (row) => row === undefined ? Effect.succeed(false) : settleLocked(row)))

  const sweep = Effect.flatMap(repo.due(100), (ids) => Effect.forEach(ids, settle, { discard: true }))

  const visible = (signer: Signer, id: string) =>
    Effect.gen(function*() {
      const parties = yield* d.parties.partiesOf(lower(signer.address))
      const found = yield* repo.visible(id, parties)
      if (found === undefined) return yield* new NotFound({ message: `No grant change request ${id}` })
      yield* settle(id)
      return { row: (yield* repo.find(id))!, me: lower(signer.address) }
    })

  const ownerOnly = (row: ChangeRow, me: string, what: string) =>
    row.owner_signer === me ? Effect.void : Effect.fail(new BadRequest({ message: `Only the grant's owner ${what} a change request` }))

  const closed = (row: ChangeRow) => new Conflict({ message: `Grant change request ${row.id} is ${row.status}`, details: { status: row.status } })

  const ask = Effect.fn("Approvals.askChange")(function*(signer: Signer, input: { readonly delegationId: string; readonly changes: GrantChanges; readonly reason: string }) {
    const me = lower(signer.address)
    const preview = yield* delegations.previewChange(signer, input.delegationId, input.changes)
    const grant = preview.row
    if (grant.signer_address === me) {
      return yield* new BadRequest({ message: "The owner changes a grant by building a new one: a change request is the agent's (the grant's holder) question to its owner", details: { field: "delegationId" } })
    }
    const deadline = new Date(Math.min(Date.now() + d.ttlMs, Date.parse(grant.policy_set.expiresAt)))
    deadline.setMilliseconds(0)
    const id = `gcr_${crypto.randomUUID()}`
    // The agent's reason and the grant's name are the requester's words: after the figures, quoted (src/domain/OutsideText.ts).
    const head = `The agent ${grant.delegatee_address} asks to change delegation ${grant.id} by ${deadline.toISOString()}: ` +
      `${preview.diff.map((l) => l.text).join("; ")}. What it already spent carries over: the new limits are limits of the whole.` +
      requesterWords("The agent's reason", input.reason) + requesterWords("Delegation named by the requester", grant.name)
    const inserted = yield* inTransaction(Effect.gen(function*() {
      const ok = yield* repo.insert({
        id,
        delegation_id: grant.id,
        account_id: grant.account_id,
        owner_signer: grant.signer_address,
        chain_id: grant.chain_id,
        delegate_address: lower(grant.delegatee_address),
        requested_by: me,
        changes: input.changes,
        diff: preview.diff,
        reason: input.reason,
        summary: head,
        deadline
      })
      if (!ok) return false
      const row = (yield* repo.find(id))!
      yield* log(row, "requested", "pending", me)
      yield* tell(row.owner_signer, row, "warning", "Your agent asks for more", head)
      return true
    }))
    if (!inserted) {
      const open = yield* repo.findOpen(grant.id)
      return yield* new Conflict({
        message: `Delegation ${grant.id} already has an open change request${open === undefined ? "" : ` (${open.id})`}: wait for the owner's answer`,
        details: open === undefined ? {} : { changeId: open.id }
      })
    }
    return toWire((yield* repo.find(id))!)
  })

  const get = Effect.fn("Approvals.getChange")(function*(signer: Signer, id: string) {
    return toWire((yield* visible(signer, id)).row)
  })

  const list = Effect.fn("Approvals.listChanges")(function*(signer: Signer, status: string | undefined) {
    const parties = yield* d.parties.partiesOf(lower(signer.address))
    return (yield* repo.list(parties, status)).map(toWire)
  })

  /** The owner's replacement operation for a pending request (each call a fresh build; the latest is the one to accept). */
  const build = Effect.fn("Approvals.buildChange")(function*(signer: Signer, id: string) {
    const { row, me } = yield* visible(signer, id)
    yield* ownerOnly(row, me, "builds")
    if (row.status !== "pending") return yield* closed(row)
    const replacement = yield* delegations.buildReplacement(signer, row.delegation_id, row.changes)
    yield* repo.setBuild(id, lower(replacement.build.userOpHash))
    return replacement.build
  })

  const accept = Effect.fn("Approvals.acceptChange")(function*(signer: Signer, id: string, input: CreateInput) {
    const { row, me } = yield* visible(signer, id)
    yield* ownerOnly(row, me, "accepts")
    const hash = lower(input.userOpHash)
    if (row.status === "accepted" && row.build_hash === hash) return toWire(row)
    if (row.status !== "pending" && row.status !== "accepting") return yield* closed(row)
    if (row.build_hash === null || row.build_hash !== hash) {
      return yield* new BadRequest({ message: "userOpHash: not this request's latest replacement build (POST /approvals/changes/{id}/build)", details: { field: "userOpHash" } })
    }
    const bound = yield* inTransaction(Effect.gen(function*() {
      const locked = (yield* repo.lock(id))!
      if (yield* settleLocked(locked)) return (yield* repo.find(id))!.status
      if (locked.status === "pending" && locked.build_hash === hash) {
        yield* repo.markAccepting(id)
        return "accepting" as const
      }
      return locked.status
    }))
    if (bound !== "accepting") return yield* closed((yield* repo.find(id))!)
    // The replacement is relayed as any enable (checked, waited for; idempotent by build).
    const created = yield* Effect.result(delegations.create(signer, { ...input, intentType: "delegation_enable" }))
    yield* settle(id)
    const after = (yield* repo.find(id))!
    if (created._tag === "Failure") {
      if (after.status === "accepted") return toWire(after)
      // Relayed and refused (the chain would not run it: the old grant spent or revoked meanwhile): a conflict, the request open again.
      const outcome = yield* delegations.enableOutcome(row.owner_signer, hash)
      // Refused before anything was stored (a bad signature, a stale operation): open again.
      if (outcome === undefined) yield* inTransaction(repo.reopen(id))
      if (outcome?.status === "failed") {
        return yield* new Conflict({
          message: `The replacement did not execute: ${created.failure.message}. The request is ${after.status}; build it again.`,
          details: { status: after.status }
        })
      }
      return yield* created.failure
    }
    return toWire(after)
  })

  const decline = Effect.fn("Approvals.declineChange")(function*(signer: Signer, id: string, reason: string) {
    const { row, me } = yield* visible(signer, id)
    yield* ownerOnly(row, me, "declines")
    const done = yield* inTransaction(Effect.gen(function*() {
      const locked = (yield* repo.lock(id))!
      if (locked.status !== "pending") return false
      yield* repo.markDeclined(id, me, reason)
      yield* log(locked, "declined", "denied", me, reason)
      yield* tell(locked.requested_by, locked, "danger", "Grant change declined", `Your owner declined the change of delegation ${locked.delegation_id}: ${reason}`)
      return true
    }))
    const after = (yield* repo.find(id))!
    if (!done) return yield* closed(after)
    return toWire(after)
  })

  yield* sweep.pipe(Effect.catchCause(() => Effect.void), Effect.repeat(Schedule.spaced(yield* ApprovalSweep)), Effect.forkScoped)

  return { ask, get, list, build, accept, decline, sweep }
})

type Shape = Effect.Success<typeof make>

export class GrantChangeRequests extends Context.Service<GrantChangeRequests, Shape>()("das/approvals/GrantChangeRequests") {
  /** Settles due requests every `APPROVALS_SWEEP_INTERVAL` (they are also settled whenever one is touched). */
  static readonly layer = Layer.effect(GrantChangeRequests, make).pipe(
    Layer.provide(Layer.mergeAll(ChangeRepo.layer, ApprovalRepo.layer, AuditLive))
  )
}
