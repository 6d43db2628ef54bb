/**
 * What other features plug into the relay, per intent type (or `"*"` for every intent):
 *
 * - **policy checks**, run at submit time before anything is forwarded: fail with
 *   `OutOfScope` (its `declineReason`) to decline; the relay answers 422, stores the
 *   operation as failed/rejected and appends its one audit entry. A check that dies is a
 *   500 and nothing is stored.
 * - **on-executed effects**, run only when the bundler's receipt shows the operation
 *   executed (`success: true`), inside the same database transaction that moves the
 *   operation to `included` and appends its audit entry. Use the `SqlClient` captured
 *   when the hook was made: its queries join that transaction. A hook that dies rolls the
 *   whole settlement back; it is retried by the next poll or reconciler pass.
 * - **on-failed effects**, run when the operation settles as failed: reverted on chain
 *   (the bundler's receipt, `success: false`), refused by the bundler or declined at
 *   submit (the reason, a string), inside the same transaction that stores the failure
 *   and appends its audit entry (same rules as on-executed effects). Use them to free
 *   what the operation held (e.g. a delegation's spend reservation).
 *
 * Register from a layer: `RelayHooks.layer` is one constant, so every feature that
 * provides it shares the same registry (layers are memoized).
 */
import { Context, Effect, Layer } from "effect"
import type { OutOfScope } from "../api/Errors.ts"
import type { StoredBuild } from "../builds/OperationBuilder.ts"
import type { UserOperationV07, UserOpReceipt as BundlerReceipt } from "../chain/Bundler.ts"
import type { IntentType } from "../domain/Operations.ts"

export interface RelayedOperation {
  readonly id: string
  readonly accountId: string
  readonly signerAddress: string
  readonly intentType: IntentType
  readonly chainId: number
  readonly userOpHash: string
  /** The signed operation as submitted. */
  readonly userOp: UserOperationV07
  /** The stored build it matched (intent, metadata of the feature that built it). */
  readonly build: StoredBuild
  /**
   * Set when the operation is settled again after its first settlement (corrected from the
   * chain after a refusal, re-settled after a reorg): a key unique to this settlement, so
   * that entries a hook appends for it follow the first ones instead of colliding with them.
   */
  readonly settlementKey?: string
}

export type PolicyCheck = (operation: RelayedOperation) => Effect.Effect<void, OutOfScope>
/**
 * A policy check in two steps: what it reads of the world (the chain) before the stored
 * operation's transaction begins, then the decision it makes inside it (the effect returned).
 * So no lock of that transaction (the operation's row, the rows the decision locks) is held
 * across a call to the chain.
 */
export type StagedPolicyCheck = (operation: RelayedOperation) => Effect.Effect<Effect.Effect<void, OutOfScope>>
export type OnExecuted = (operation: RelayedOperation, receipt: BundlerReceipt) => Effect.Effect<void>
/** `failure`: the receipt when it reverted on chain; the reason when it never reached the chain (rejected / declined). */
export type OnFailed = (operation: RelayedOperation, failure: BundlerReceipt | string) => Effect.Effect<void>

type Key = IntentType | "*"

export class RelayHooks extends Context.Service<RelayHooks, {
  /**
   * `readOnly`: the check writes nothing (it only reads, or decides from the build), so it need not
   * share the stored operation's transaction; by default a check runs inside it, after the insert.
   */
  registerPolicyCheck(intent: Key, name: string, check: PolicyCheck, options?: { readonly readOnly?: boolean }): Effect.Effect<void>
  /** A check that writes (never read-only), in two steps (`StagedPolicyCheck`). */
  registerStagedPolicyCheck(intent: Key, name: string, check: StagedPolicyCheck): Effect.Effect<void>
  registerOnExecuted(intent: Key, name: string, hook: OnExecuted): Effect.Effect<void>
  registerOnFailed(intent: Key, name: string, hook: OnFailed): Effect.Effect<void>
  /** Runs every check registered for the operation's intent and for `"*"`, in registration order. */
  checkPolicy(operation: RelayedOperation): Effect.Effect<void, OutOfScope>
  /**
   * The first steps of those checks (their reads), run now; what it answers runs their decisions
   * in registration order (inside the stored operation's transaction).
   */
  preparePolicy(operation: RelayedOperation): Effect.Effect<Effect.Effect<void, OutOfScope>>
  /** Whether every check that applies to `intent` is read-only (then none needs the insert's transaction). */
  checksReadOnly(intent: IntentType): boolean
  /** Runs every on-executed hook for the operation's intent and for `"*"` (caller holds the transaction). */
  runOnExecuted(operation: RelayedOperation, receipt: BundlerReceipt): Effect.Effect<void>
  /** Runs every on-failed hook for the operation's intent and for `"*"` (caller holds the transaction). */
  runOnFailed(operation: RelayedOperation, failure: BundlerReceipt | string): Effect.Effect<void>
}>()("das/userops/RelayHooks") {
  static readonly layer = Layer.sync(RelayHooks, () => {
    const checks: Array<{ key: Key; name: string; check: StagedPolicyCheck; readOnly: boolean }> = []
    const hooks: Array<{ key: Key; name: string; hook: OnExecuted }> = []
    const failedHooks: Array<{ key: Key; name: string; hook: OnFailed }> = []
    const applies = (key: Key, intent: IntentType) => key === "*" || key === intent
    return RelayHooks.of({
      // Registering the same name twice (a layer built twice) keeps one entry.
      registerPolicyCheck: (key, name, check, options) =>
        Effect.sync(() => {
          if (!checks.some((c) => c.key === key && c.name === name)) {
            checks.push({ key, name, check: (op) => Effect.succeed(check(op)), readOnly: options?.readOnly === true })
          }
        }),
      registerStagedPolicyCheck: (key, name, check) =>
        Effect.sync(() => {
          if (!checks.some((c) => c.key === key && c.name === name)) checks.push({ key, name, check, readOnly: false })
        }),
      registerOnExecuted: (key, name, hook) =>
        Effect.sync(() => {
          if (!hooks.some((h) => h.key === key && h.name === name)) hooks.push({ key, name, hook })
        }),
      registerOnFailed: (key, name, hook) =>
        Effect.sync(() => {
          if (!failedHooks.some((h) => h.key === key && h.name === name)) failedHooks.push({ key, name, hook })
        }),
      checkPolicy: (operation) =>
        Effect.forEach(
          checks.filter((c) => applies(c.key, operation.intentType)),
          (c) => Effect.flatten(c.check(operation)).pipe(Effect.withSpan(`RelayHooks.policy.${c.name}`)),
          { discard: true }
        ),
      preparePolicy: (operation) =>
        Effect.map(
          Effect.forEach(
            checks.filter((c) => applies(c.key, operation.intentType)),
            (c) => c.check(operation).pipe(
              Effect.map((decide) => decide.pipe(Effect.withSpan(`RelayHooks.policy.${c.name}`))),
              Effect.withSpan(`RelayHooks.prepare.${c.name}`)
            )
          ),
          (decisions) => Effect.forEach(decisions, (decide) => decide, { discard: true })
        ),
      checksReadOnly: (intent) => checks.every((c) => !applies(c.key, intent) || c.readOnly),
      runOnExecuted: (operation, receipt) =>
        Effect.forEach(
          hooks.filter((h) => applies(h.key, operation.intentType)),
          (h) => h.hook(operation, receipt).pipe(Effect.withSpan(`RelayHooks.onExecuted.${h.name}`)),
          { discard: true }
        ),
      runOnFailed: (operation, failure) =>
        Effect.forEach(
          failedHooks.filter((h) => applies(h.key, operation.intentType)),
          (h) => h.hook(operation, failure).pipe(Effect.withSpan(`RelayHooks.onFailed.${h.name}`)),
          { discard: true }
        )
    })
  })
}
