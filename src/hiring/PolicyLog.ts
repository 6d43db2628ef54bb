/**
 * A change of the owner's hire policy is an owner change like any other: it is appended to the
 * owner's tamper-evident log (src/audit) in the same transaction as the stored policy, with the
 * policy before and after in the entry. The entry goes to the signer's primary account (the
 * policy is the signer's, across chains; the activity without `accountId` shows that account's log).
 * docs/marketplace.md, "Hire only a named agent".
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Accounts } from "../accounts/Accounts.ts"
import { AuditChain } from "../audit/AuditChain.ts"
import { Chains } from "../chain/Chains.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { Address } from "../domain/Primitives.ts"
import { HirePolicies, type HirePolicy, type HirePolicyInput, validatePolicy } from "./IdentityPolicy.ts"

/** The entry's action. */
export const HIRE_POLICY_ACTION = "hire_policy_set"

/** A policy as the entry states it: its fields in a fixed order, no timestamp (the entry has its own). */
export const policyText = (p: HirePolicy): string =>
  JSON.stringify({
    requireRegistered: p.requireRegistered,
    ...(p.minReputation === undefined ? {} : { minReputation: p.minReputation }),
    reputationClients: p.reputationClients.map((c) => c.toLowerCase())
  })

/**
 * The entry's key (hashed into the log like every field): unique per change, then the policy
 * before and after. At most 20 reviewers each side keeps it under 2 kB (the key's index takes 2.7).
 */
export const policyChangeKey = (id: string, before: HirePolicy, after: HirePolicy) =>
  `hire-policy:${id} before ${policyText(before)} after ${policyText(after)}`

export const makePolicyLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const transaction = transactionRetryingConflicts(sql)
  const policies = yield* HirePolicies
  const audit = yield* AuditChain
  const accounts = yield* Accounts
  const chains = yield* Chains

  /** Validates, stores and logs the new policy; a refused one changes nothing and logs nothing. */
  return Effect.fn("Hiring.setPolicy")(function*(signer: Address, input: HirePolicyInput) {
    const next = yield* validatePolicy(input)
    const account = yield* accounts.ensurePrimary(signer)
    return yield* transaction(Effect.gen(function*() {
      // One change of a signer's policy at a time, so each entry's "before" is the policy it replaced.
      yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`hire-policy:${signer.toLowerCase()}`}, 0))`
      const before = yield* policies.get(signer)
      const stored = yield* policies.set(signer, next)
      yield* audit.append({
        accountId: account.id,
        declineId: policyChangeKey(crypto.randomUUID(), before, stored),
        actor: "owner",
        action: HIRE_POLICY_ACTION,
        chain: chains.nameOf(account.chainId),
        chainId: account.chainId,
        status: "accepted"
      })
      return stored
    })).pipe(
      // A fresh uuid never collides, and a lost statement is a defect here as in the store.
      Effect.catchTag("AuditDuplicate", (e) => Effect.die(e)),
      Effect.catchTag("SqlError", (e) => Effect.die(e))
    )
  })
})
