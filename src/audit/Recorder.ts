/**
 * What the relay and the builds call when something reaches the audit log: the
 * audit entry AND the matching notification, in one transaction.
 *
 * Each `record*` runs in `sql.withTransaction`: inside the caller's transaction (a
 * savepoint) when one is open — the usual case: the caller moves its operation to a
 * terminal status with a conditional UPDATE and records in the same transaction —
 * and in a transaction of its own otherwise. On `AuditDuplicate` nothing of the
 * record was written (the savepoint rolled back) and the caller's transaction is
 * still usable.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { Notification } from "../notifications/Domain.ts"
import { Notifications, type NotifyInput } from "../notifications/Notifications.ts"
import { type AppendInput, AuditChain, type AuditDuplicate } from "./AuditChain.ts"
import type { StoredEntry } from "./Chain.ts"

export interface Recorded {
  readonly entry: StoredEntry
  readonly notification: Notification
}

type Common = Omit<AppendInput, "status" | "operationId" | "declineId" | "declineReason">

/** An operation that reached a terminal status. */
export interface OutcomeInput extends Common {
  readonly operationId: string
  readonly status: "executed" | "failed"
  /** On `failed`: why (the bundler's rejection reason, `reverted`, ...). */
  readonly declineReason?: string | undefined
}

/** An action refused by policy (at build time or at the relay) before anything was sent. */
export interface DeclineInput extends Common {
  readonly declineReason: string
  /** The operation, when the declined thing was persisted as one. */
  readonly operationId?: string | undefined
  /** The caller's unique id for the decline (idempotency); generated when neither id is given. */
  readonly declineId?: string | undefined
}

const REASONS: Record<string, string> = {
  cap_exceeded: "it would exceed the delegation's budget",
  per_action_exceeded: "it exceeds the per-action maximum",
  max_actions_exceeded: "the delegation has used all its actions",
  recipient_not_allowed: "the recipient is not on the allowlist",
  target_not_allowed: "the call target or function is not allowed",
  expired: "the delegation has expired",
  revoked: "the delegation was revoked",
  account_frozen: "the account is frozen",
  period_exceeded: "it would exceed this period's allowance"
}

const what = (e: StoredEntry) =>
  e.amount !== null ? `${e.action} of ${e.amount}${e.token !== null ? ` ${e.token}` : ""}` : e.action

/** The notification an audit entry raises (pure: the tests and the docs use it too). */
export const notificationFor = (e: StoredEntry): NotifyInput => {
  const link = {
    relatedType: "activity",
    relatedId: e.id,
    action: { label: "View activity", target: `activity/${e.id}` }
  } as const
  switch (e.status) {
    case "executed":
      return { tone: "success", title: "Action executed", body: `${what(e)} executed on ${e.chain}.`, ...link }
    case "declined": {
      const reason = e.declineReason === null ? "" : `: ${REASONS[e.declineReason] ?? e.declineReason}`
      return { tone: "danger", title: "Action blocked", body: `${what(e)} was blocked${reason}.`, ...link }
    }
    case "reorged":
      return {
        tone: "warning",
        title: "Action no longer on chain",
        body: `${what(e)} left the chain in a reorganisation${e.txHash === null ? "" : ` (transaction ${e.txHash})`}; it is watched until it is included again or fails.`,
        ...link
      }
    default:
      return {
        tone: "danger",
        title: "Action failed",
        body: `${what(e)} failed on ${e.chain}${e.declineReason === null ? "" : ` (${e.declineReason})`}.`,
        ...link
      }
  }
}

export class AuditRecorder extends Context.Service<AuditRecorder, {
  /** An executed or failed operation: its one audit entry and its notification. */
  readonly recordOutcome: (input: OutcomeInput) => Effect.Effect<Recorded, AuditDuplicate>
  /** A policy decline: an `offchain_only` entry and a `danger` notification linking to it. */
  readonly recordDecline: (input: DeclineInput) => Effect.Effect<Recorded, AuditDuplicate>
  /** Any entry, with the notification `notificationFor` gives it. */
  readonly record: (input: AppendInput) => Effect.Effect<Recorded, AuditDuplicate>
}>()("das/audit/AuditRecorder") {
  static readonly layer = Layer.effect(
    AuditRecorder,
    Effect.gen(function*() {
      const transaction = transactionRetryingConflicts(yield* SqlClient.SqlClient)
      const chain = yield* AuditChain
      const notifications = yield* Notifications

      const record = Effect.fn("AuditRecorder.record")(function*(input: AppendInput) {
        return yield* transaction(Effect.gen(function*() {
          const entry = yield* chain.append(input)
          const notification = yield* notifications.notifyAccount(entry.accountId, notificationFor(entry))
          return { entry, notification }
        }))
      }, Effect.catchTag("SqlError", Effect.die))

      const recordOutcome = (input: OutcomeInput) => record(input)

      const recordDecline = (input: DeclineInput) =>
        record({
          ...input,
          status: "declined",
          provenance: input.provenance ?? "offchain_only",
          ...(input.operationId === undefined ? { declineId: input.declineId ?? `dcl_${crypto.randomUUID()}` } : {})
        })

      return AuditRecorder.of({ recordOutcome, recordDecline, record })
    })
  )
}

/** AuditRecorder with AuditChain and Notifications, given a SqlClient. */
export const AuditLive = AuditRecorder.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(AuditChain.layer, Notifications.layer))
)
