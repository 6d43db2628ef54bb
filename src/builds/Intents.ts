import type { IntentType } from "../domain/Operations.ts"

/**
 * Intents that only ever reduce what can be done with the account: freezes and revokes
 * (withdraw-to-safety is a `send` that its builder marks risk-reducing explicitly).
 * They are sponsored, instant, and never declined because the account is frozen.
 */
export const RISK_REDUCING_INTENTS: ReadonlySet<IntentType> = new Set<IntentType>([
  "account_freeze",
  "panic_freeze",
  "delegation_revoke",
  "delegation_freeze"
])

/** Allowed on a frozen account although not risk-reducing: the way out of the freeze. */
export const FROZEN_EXEMPT_INTENTS: ReadonlySet<IntentType> = new Set<IntentType>(["account_unfreeze"])

export const isRiskReducingIntent = (intent: IntentType) => RISK_REDUCING_INTENTS.has(intent)

/** Whether a frozen account may still build and relay an operation of this kind. */
export const allowedWhileFrozen = (intent: IntentType, riskReducing: boolean) =>
  riskReducing || FROZEN_EXEMPT_INTENTS.has(intent)

export const ACCOUNT_FROZEN = "account_frozen"
