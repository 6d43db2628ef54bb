import type { IntentType } from "../domain/Operations.ts"

/**
 * Intents that only ever reduce what can be done with the account: freezes and revokes
 * (withdraw-to-safety is a `send`, a cancel of a started recovery a `rules_update`, that their
 * builders mark risk-reducing explicitly). They are sponsored, instant, and never declined
 * because the account is frozen. None is free (issue 41): each builder refuses one that would
 * reduce nothing now (a freeze of a frozen account, a revoke of a revoked grant: 409/400) or
 * builds it as an ordinary operation (a revoke of an expired grant), and every sponsored one is
 * counted (src/builds/Sponsorship.ts). `delegation_freeze` is not here: nothing builds it.
 */
export const RISK_REDUCING_INTENTS: ReadonlySet<IntentType> = new Set<IntentType>([
  "account_freeze",
  "panic_freeze",
  "delegation_revoke"
])

/** Allowed on a frozen account although not risk-reducing: the way out of the freeze. */
export const FROZEN_EXEMPT_INTENTS: ReadonlySet<IntentType> = new Set<IntentType>(["account_unfreeze"])

export const isRiskReducingIntent = (intent: IntentType) => RISK_REDUCING_INTENTS.has(intent)

/** Whether a frozen account may still build and relay an operation of this kind. */
export const allowedWhileFrozen = (intent: IntentType, riskReducing: boolean) =>
  riskReducing || FROZEN_EXEMPT_INTENTS.has(intent)

export const ACCOUNT_FROZEN = "account_frozen"
