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
 *
 * The notification is the notifications feature's (above this layer): it provides the
 * `EntryNotifier` port (src/notifications/EntryNotifier.ts), wired at the top (src/Server.ts).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import { type AppendInput, AuditChain, type AuditDuplicate } from "./AuditChain.ts"
import type { StoredEntry } from "./Chain.ts"

/** The notification an entry raised: its id. */
export interface RaisedNotification {
  readonly id: string
}

export interface Recorded {
  readonly entry: StoredEntry
  readonly notification: RaisedNotification
}

/**
 * The port through which an entry raises its notification, inside the entry's transaction
 * (both are written, or neither). Provided by the notifications feature.
 */
export class EntryNotifier extends Context.Service<EntryNotifier, {
  readonly notify: (entry: StoredEntry) => Effect.Effect<RaisedNotification>
}>()("das/audit/EntryNotifier") {}

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
      const notifier = yield* EntryNotifier

      const record = Effect.fn("AuditRecorder.record")(function*(input: AppendInput) {
        return yield* transaction(Effect.gen(function*() {
          const entry = yield* chain.append(input)
          const notification = yield* notifier.notify(entry)
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

/** AuditRecorder with AuditChain, given a SqlClient and the `EntryNotifier` port. */
export const AuditLive = AuditRecorder.layer.pipe(Layer.provideMerge(AuditChain.layer))
