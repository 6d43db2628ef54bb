/**
 * The notification an audit entry raises (the `EntryNotifier` port of src/audit/Recorder.ts):
 * written by `Notifications.notifyAccount` in the entry's own transaction, so an entry and its
 * notification exist together or not at all.
 */
import { Effect, Layer } from "effect"
import { EntryNotifier } from "../audit/Recorder.ts"
import type { StoredEntry } from "../audit/Chain.ts"
import { Notifications, type NotifyInput } from "./Notifications.ts"

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

/** The port's implementation over `Notifications`. */
export const EntryNotifierLive = Layer.effect(
  EntryNotifier,
  Effect.map(Notifications, (notifications) =>
    EntryNotifier.of({
      notify: (entry) => Effect.map(notifications.notifyAccount(entry.accountId, notificationFor(entry)), (n) => ({ id: n.id }))
    }))
).pipe(Layer.provide(Notifications.layer))
