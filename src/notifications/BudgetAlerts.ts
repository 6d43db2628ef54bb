/**
 * Budget alerts: the owner gets ONE notification when a delegation's budget for a token
 * passes 80 % and ONE when it reaches 100 %, related to the delegation.
 *
 * Runs as an on-executed relay hook for `delegated_action`, inside the relay's settlement
 * transaction (so the alert commits with the final spend). It counts the executed
 * operation's own reservation as spent whatever the hooks' order, and the
 * `budget_alerts` primary key (delegation, token, period start, threshold) makes each
 * alert exactly once however many settlements race. A budget without a period uses the
 * epoch as its period start.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { fromUnits, toUnits } from "../delegations/Policy.ts"
import { RelayHooks, RelayHooksLive } from "../delegations/Ports.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { Notifications } from "./Notifications.ts"

export const THRESHOLDS = [80, 100] as const
const NO_PERIOD = new Date(0)

interface Budget {
  readonly token: { readonly address?: string | null; readonly symbol: string }
  readonly amount: number
}

export const makeBudgetAlerts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const notifications = yield* Notifications
  const tokens = yield* TokenRegistry

  /** After the reservation's spend is final: raises the thresholds it crossed, once each. */
  const afterSpend = Effect.fn("BudgetAlerts.afterSpend")(function*(reservationId: string) {
    const rows = yield* sql<{ delegation_id: string; token_address: string; account_id: string; chain_id: number; name: string; policy_set: { budgets: ReadonlyArray<Budget> }; units: string }>`
      SELECT d.id AS delegation_id, r.token_address, d.account_id, d.chain_id, d.name, d.policy_set,
        (SELECT COALESCE(sum(x.units), 0)::text FROM delegation_reservations x
         WHERE x.delegation_id = d.id AND x.token_address = r.token_address
           AND (x.status = 'final' OR x.id = r.id)) AS units
      FROM delegation_reservations r JOIN delegations d ON d.id = r.delegation_id
      WHERE r.id = ${reservationId}`
    const row = rows[0]
    if (row === undefined) return
    const budget = row.policy_set.budgets.find((b) => (b.token.address ?? "").toLowerCase() === row.token_address.toLowerCase())
    if (budget === undefined) return
    const decimals = tokens.byAddress(row.chain_id, row.token_address)?.decimals ?? 18
    const limit = toUnits(budget.amount, decimals) ?? 0n
    if (limit <= 0n) return
    const spent = BigInt(row.units)
    for (const threshold of THRESHOLDS) {
      if (spent * 100n < limit * BigInt(threshold)) continue
      // Claim the alert first: only the claimant writes the notification (same transaction).
      const claimed = yield* sql`
        INSERT INTO budget_alerts (delegation_id, token_address, period_start, threshold, notification_id)
        VALUES (${row.delegation_id}, ${row.token_address}, ${NO_PERIOD}, ${threshold}, '')
        ON CONFLICT DO NOTHING RETURNING threshold`
      if (claimed.length === 0) continue
      const spentText = `${fromUnits(spent, decimals)} of ${budget.amount} ${budget.token.symbol}`
      const related = {
        relatedType: "delegation",
        relatedId: row.delegation_id,
        action: { label: "View delegation", target: `delegations/${row.delegation_id}` }
      }
      const n = yield* notifications.notifyAccount(row.account_id, threshold === 100
        ? { tone: "danger", title: "Budget used up", body: `"${row.name}" has spent its whole budget (${spentText}).`, ...related }
        : { tone: "warning", title: "Budget 80% used", body: `"${row.name}" has spent ${spentText}.`, ...related })
      yield* sql`UPDATE budget_alerts SET notification_id = ${n.id}
                 WHERE delegation_id = ${row.delegation_id} AND token_address = ${row.token_address}
                   AND period_start = ${NO_PERIOD} AND threshold = ${threshold}`
    }
  }, Effect.orDie)

  return { afterSpend }
})

/** Registers the alert hook on the relay (the same `RelayHooks` the delegations use). */
export const BudgetAlertsLive = Layer.effectDiscard(Effect.gen(function*() {
  const hooks = yield* RelayHooks
  const { afterSpend } = yield* makeBudgetAlerts
  yield* hooks.registerOnExecuted("delegated_action", "notifications.budgetAlerts", (op) => {
    const id = op.build.metadata["reservationId"]
    return typeof id === "string" ? afterSpend(id) : Effect.void
  })
})).pipe(Layer.provide(Layer.mergeAll(RelayHooksLive, TokenRegistry.layer, Notifications.layer)))
