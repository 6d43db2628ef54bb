/**
 * What the console writes, in one place: one date format (the reader's locale, through Intl), amounts
 * with their token, addresses shortened, periods and actions in words. Pure functions: the views
 * and the tests share them.
 */

/** The one date format of the console: the reader's locale, its time zone, date and time. */
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })
export const formatDate = (iso: string | number | Date): string => {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? String(iso) : dateTime.format(d)
}

const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 6 })
export const formatNumber = (n: number): string => number.format(n)
export const formatAmount = (n: number, symbol: string): string => `${number.format(n)} ${symbol}`

/** `0x1234…abcd`: enough to tell two apart at a glance; the full address is one copy away. */
export const shortAddress = (address: string): string =>
  address.length > 14 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address

/** A budget's period in words: `per week`, `per 3600 s`, or `in total`. */
export const periodWords = (period: { readonly every?: string; readonly seconds?: number } | undefined): string => {
  if (period === undefined) return "in total"
  if (period.every === "day") return "per day"
  if (period.every === "week") return "per week"
  if (period.every === "month") return "per 30 days"
  if (period.seconds !== undefined) {
    const s = period.seconds
    if (s % 86_400 === 0) return s === 86_400 ? "per day" : `per ${s / 86_400} days`
    if (s % 3_600 === 0) return s === 3_600 ? "per hour" : `per ${s / 3_600} hours`
    if (s % 60 === 0) return s === 60 ? "per minute" : `per ${s / 60} minutes`
    return `per ${s} s`
  }
  return "in total"
}

/** Shares of a budget's bar, in percent (0..100 each, together at most 100). */
export const barShares = (limit: number, spent: number, reserved: number) => {
  if (!(limit > 0)) return { spent: 0, reserved: 0 }
  const s = Math.min(100, Math.max(0, (100 * spent) / limit))
  const r = Math.min(100 - s, Math.max(0, (100 * reserved) / limit))
  return { spent: Math.round(s * 10) / 10, reserved: Math.round(r * 10) / 10 }
}

const actionWords: Record<string, string> = {
  delegated_action: "paid",
  delegation_enable: "granted",
  delegation_revoke: "revoked a grant",
  account_freeze: "froze the account",
  account_unfreeze: "unfroze the account",
  approval_request: "approval request",
  approval_signature: "signed an approval",
  grant_change_request: "asked for more",
  rules_update: "changed the account's rules",
  guardian_add: "added guardians",
  guardian_remove: "removed guardians",
  panic_install: "installed a panic key",
  panic_freeze: "froze the account with the panic key",
  send: "sent",
  account_deploy: "deployed the account",
  device_add: "added a device",
  device_remove: "removed a device",
  x402_payment: "paid (x402)",
  managed_deposit: "deposited"
}
/** Requests read by their step: who asked, who answered (the entry's status). */
const requestWords: Record<string, Record<string, string>> = {
  approval_request: { pending: "asked for approval to pay", approved: "approved paying", denied: "denied paying", spent: "paid, approved,", expired: "let expire a request to pay" },
  grant_change_request: { pending: "asked for more", accepted: "accepted the request for more", denied: "declined the request for more", expired: "let expire the request for more" }
}
/** An audit entry's action in words, by its status for a request (unknown ones with spaces for underscores). */
export const actionInWords = (action: string, status?: string): string =>
  (status === undefined ? undefined : requestWords[action]?.[status]) ?? actionWords[action] ?? action.replace(/_/g, " ")
