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

/**
 * What happened to the owner's own account (issue 27): who signs for it, who can recover or
 * freeze it. Told at once on every channel, with words of their own rather than "Action executed".
 */
const ACCOUNT_EVENTS: Record<string, { readonly tone: "danger" | "warning" | "info"; readonly title: string; readonly body: string }> = {
  panic_freeze: { tone: "danger", title: "Account frozen by a panic key", body: "A panic key froze the account: its grants are disabled until a device unfreezes it." },
  panic_install: { tone: "warning", title: "Panic key installed", body: "A panic key can now freeze the account (and do nothing else)." },
  guardian_add: { tone: "warning", title: "Guardians added", body: "Guardians were added: enough of them can start a recovery of the account." },
  guardian_remove: { tone: "warning", title: "Guardians removed", body: "Guardians were removed from the account." },
  device_add: { tone: "warning", title: "Device added", body: "A device can now sign for the account." },
  device_remove: { tone: "warning", title: "Device removed", body: "A device no longer signs for the account." },
  recovery_approved: { tone: "danger", title: "Recovery approved by a guardian", body: "A guardian approved replacing the account's keys. If this is not you, cancel it now." },
  recovery_started: {
    tone: "danger",
    title: "Recovery started",
    body: "Guardians started replacing the account's keys; it can execute after the delay. If this is not you, cancel it now from any device."
  },
  recovery_cancelled: { tone: "info", title: "Recovery cancelled", body: "The recovery of the account was cancelled; its approvals are void." },
  recovery_executed: { tone: "danger", title: "Recovery executed", body: "The account's keys were replaced by a recovery: only the new keys sign for it now." }
}

/** The notification an audit entry raises (pure: the tests and the docs use it too). */
export const notificationFor = (e: StoredEntry): NotifyInput => {
  const link = {
    relatedType: "activity",
    relatedId: e.id,
    action: { label: "View activity", target: `activity/${e.id}` }
  } as const
  const event = e.status === "executed" ? ACCOUNT_EVENTS[e.action] : undefined
  if (event !== undefined) {
    return { tone: event.tone, title: event.title, body: `${event.body} (${e.chain}${e.txHash === null ? "" : `, transaction ${e.txHash}`})`, ...link }
  }
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
