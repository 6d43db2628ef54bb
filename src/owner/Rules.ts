/**
 * Account rules: the account-level freeze (the rest of the owner's account: OwnerAccount.ts).
 *
 * Freeze on chain (docs/relay.md, docs/onchain.md): the Delegation Framework has no
 * account-level freeze, so `account_freeze` is one owner operation that batches the
 * calls every registered *freeze plan* contributes (the delegations feature contributes
 * `disableDelegation` for each live delegation; `account_unfreeze` re-enables those).
 * When no plan contributes a call (no live delegations), the operation is an honest
 * no-op: a zero-value call from the account to itself (its `receive`), whose transaction
 * is the on-chain record of the freeze. Either way the frozen flag flips only when the
 * relay sees the operation executed (an on-executed hook below), and while it is set
 * the service builds and relays only risk-reducing operations and the unfreeze.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Address, Hex } from "viem"
import { Conflict } from "../api/Errors.ts"
import { type BuildError, type Call, OperationBuilder } from "../builds/OperationBuilder.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import { RelayHooks } from "../userops/RelayHooks.ts"
import { readFrozen } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { quoteOutsideText } from "../domain/OutsideText.ts"

export type RuleIntent = "account_freeze" | "account_unfreeze"

/** What a feature adds to the freeze and unfreeze operations of an account. */
export interface FreezeContribution {
  readonly freeze: ReadonlyArray<Call>
  readonly unfreeze: ReadonlyArray<Call>
  /** For the summary, e.g. "2 live delegations". */
  readonly description?: string
}

/** May fail when it reads the chain and the chain cannot be reached (the build fails: nothing half-planned). */
export type FreezePlan = (account: Account) => Effect.Effect<FreezeContribution, BuildError>

export class AccountRules extends Context.Service<AccountRules, {
  /** `stubSignature`: the device that will sign estimates with its stub (a passkey's verification costs more). */
  build(account: Account, intent: RuleIntent, options?: { readonly stubSignature?: Hex }): Effect.Effect<UserOpBuild, BuildError | Conflict>
  /** What every freeze plan contributes to a freeze now (withdraw-to-safety freezes in the same operation). */
  freezeCalls(account: Account): Effect.Effect<{ readonly calls: ReadonlyArray<Call>; readonly description: string }, BuildError>
  /** Features add their calls to the freeze / unfreeze operation (e.g. delegations: disable / enable each live one). */
  registerFreezePlan(name: string, plan: FreezePlan): Effect.Effect<void>
}>()("das/accounts/AccountRules") {
  static readonly layer = Layer.effect(AccountRules, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const builder = yield* OperationBuilder
  const hooks = yield* RelayHooks
  const plans = new Map<string, FreezePlan>()

  const setFrozen = (frozen: boolean) => (op: { readonly accountId: string }) =>
    sql`UPDATE accounts SET frozen = ${frozen} WHERE id = ${op.accountId}`.pipe(Effect.asVoid, Effect.orDie)
  // Only on execution, inside the relay's settling transaction.
  yield* hooks.registerOnExecuted("account_freeze", "account_frozen_flag", setFrozen(true))
  yield* hooks.registerOnExecuted("account_unfreeze", "account_frozen_flag", setFrozen(false))
  // Withdraw-to-safety that freezes in the same operation (OwnerAccount.ts).
  yield* hooks.registerOnExecuted("send", "account_frozen_flag", (op) =>
    op.build.metadata["freezes"] === true ? setFrozen(true)(op) : Effect.void)

  const freezeCalls = Effect.fn("AccountRules.freezeCalls")(function*(account: Account) {
    const contributions = yield* Effect.forEach([...plans.values()], (plan) => plan(account))
    const described = contributions.map((c) => c.description).filter((d): d is string => d !== undefined && d !== "")
    return { calls: contributions.flatMap((c) => c.freeze), description: described.join(", ") }
  })

  const build = Effect.fn("AccountRules.build")(function*(account: Account, intent: RuleIntent, options?: { readonly stubSignature?: Hex }) {
    const frozen = yield* readFrozen(sql, account.id)
    if (intent === "account_freeze" && frozen) return yield* new Conflict({ message: "The account is already frozen" })
    if (intent === "account_unfreeze" && !frozen) return yield* new Conflict({ message: "The account is not frozen" })
    const contributions = yield* Effect.forEach([...plans.values()], (plan) => plan(account))
    const calls = contributions.flatMap((c) => intent === "account_freeze" ? c.freeze : c.unfreeze)
    const described = contributions.map((c) => c.description).filter((d): d is string => d !== undefined && d !== "")
    const marker: Call = { to: account.address as Address, value: 0n, data: "0x" }
    const verb = intent === "account_freeze" ? "Freeze" : "Unfreeze"
    const humanSummary = calls.length > 0
      ? `${verb} account ${quoteOutsideText(account.label)} (${account.address}): ${
        intent === "account_freeze" ? "disable" : "re-enable"
      } ${described.join(", ") || `${calls.length} on-chain permission(s)`} in one operation. ${
        intent === "account_freeze"
          ? "Until it is unfrozen, only risk-reducing operations can be built or relayed."
          : "Normal operations can be built and relayed again."
      }`
      : `${verb} account ${quoteOutsideText(account.label)} (${account.address}). It has no live delegations to ${
        intent === "account_freeze" ? "disable" : "re-enable"
      }, so the operation is a no-op call of the account to itself that records the ${verb.toLowerCase()} on chain. ${
        intent === "account_freeze"
          ? "Until it is unfrozen, the service builds and relays only risk-reducing operations."
          : "The service builds and relays normal operations again."
      }`
    const built = yield* builder.build({
      account,
      intentType: intent,
      calls: calls.length > 0 ? calls : [marker],
      humanSummary,
      metadata: { rule: intent, plannedCalls: calls.length },
      ...(options?.stubSignature === undefined ? {} : { stubSignature: options.stubSignature })
    })
    return built.build
  })

  return AccountRules.of({
    build,
    freezeCalls,
    registerFreezePlan: (name, plan) => Effect.sync(() => void plans.set(name, plan))
  })
})
