/**
 * Mandates are grants like any other (docs/marketplace.md, "Mandates as grants"): the
 * signer lists them with their status, revokes one with the same gasless, risk-reducing
 * `delegation_revoke` operation a delegation's revoke is, and the account freeze disables
 * every mandate that can be live on chain (the unfreeze re-enables those the freeze took,
 * never a revoked or expired one).
 *
 * Status comes from the record and the chain: `revoked` once a revoke executed (an
 * on-executed hook in the relay's settlement transaction), `expired` past its expiry,
 * `pending` until its enable operation executed, `frozen` while the account is frozen,
 * else `active`. What the freeze plan disables is read from the chain at build time
 * (`DelegationManager.disabledDelegations`), so a freeze or unfreeze never reverts on an
 * already-disabled or already-enabled mandate.
 */
import { Context, Effect, Layer } from "effect"
import { decodeFunctionResult, type Hash, type Hex } from "viem"
import { DelegationManager } from "@metamask/delegation-abis"
import { Accounts } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { AccountRules } from "../owner/Rules.ts"
import { BadRequest, NotFound } from "../api/Errors.ts"
import { type BuildError, OperationBuilder } from "../builds/OperationBuilder.ts"
import { Chains } from "../chain/Chains.ts"
import { disableCalls, disabledDelegationsCall, disabledPermissionIds, reenableCalls } from "../delegations/Caveats.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import type { Address } from "../domain/Primitives.ts"
import { RelayHooks } from "../userops/RelayHooks.ts"
import type { MandateSummary } from "./Domain.ts"
import { type MandateGrantRow, MandateGrantRows } from "./Repository.ts"

export class MandateGrants extends Context.Service<MandateGrants, {
  list(signer: Address): Effect.Effect<ReadonlyArray<MandateSummary>>
  revoke(signer: Address, mandateId: string): Effect.Effect<UserOpBuild, BadRequest | NotFound | BuildError>
}>()("das/hiring/MandateGrants") {
  static readonly layer = Layer.effect(MandateGrants, Effect.suspend(() => make)).pipe(Layer.provide(MandateGrantRows.layer))
}

const make = Effect.gen(function*() {
  const rows = yield* MandateGrantRows
  const accounts = yield* Accounts
  const builder = yield* OperationBuilder
  const chains = yield* Chains
  const rules = yield* AccountRules
  const hooks = yield* RelayHooks
  const dmOf = (chainId: number) => Effect.map(chains.serving(chainId), (net) => net.network.delegation.DelegationManager)

  const statusOf = (r: MandateGrantRow, now: Date): MandateSummary["status"] =>
    r.revoked_at !== null
      ? "revoked"
      : r.expires_at.getTime() <= now.getTime()
      ? "expired"
      : r.enable_status !== "mined"
      ? "pending"
      : r.frozen
      ? "frozen"
      : "active"

  const toSummary = (r: MandateGrantRow, now: Date): MandateSummary => ({
    mandateId: r.mandate_id,
    kind: "mandate",
    accountId: r.account_id,
    accountAddress: r.account_address,
    chainId: r.chain_id,
    agentWallet: r.agent_wallet,
    delegateeAddress: r.delegatee_address,
    perJobBudget: Number(r.per_job_budget),
    ...(r.evaluator === "0x0000000000000000000000000000000000000000" ? {} : { evaluator: r.evaluator }),
    status: statusOf(r, now),
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    ...(r.revoke_tx_hash === null ? {} : { revokeTxHash: r.revoke_tx_hash })
  })

  const disabledOnChain = (chainId: number, id: string) =>
    Effect.flatMap(chains.serving(chainId), (net) =>
      net.chain.call({ to: net.network.delegation.DelegationManager, data: disabledDelegationsCall(id as Hash) })
    ).pipe(
      Effect.map((data) => decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data }) as boolean),
      Effect.orDie
    )

  const list = Effect.fn("MandateGrants.list")(function*(signer: Address) {
    const found = yield* rows.ofSigner(signer)
    const now = new Date()
    return found.map((r) => toSummary(r, now))
  })

  const revoke = Effect.fn("MandateGrants.revoke")(function*(signer: Address, mandateId: string) {
    const row = yield* rows.one(signer, mandateId)
    if (row === undefined) return yield* new NotFound({ message: `No mandate ${mandateId}` })
    if (row.revoked_at !== null) return yield* new BadRequest({ message: `Mandate ${mandateId} is already revoked.` })
    const account: Account = yield* accounts.findById(signer, row.account_id)
    // Already disabled (the account is frozen): re-enable and disable in one batch, so the revoke
    // executes and leaves the DisabledDelegation record; the mandate is never live in between.
    const disabled = yield* disabledOnChain(row.chain_id, row.mandate_id)
    const dm = yield* dmOf(row.chain_id)
    const calls = disabled
      ? [...reenableCalls(dm, [row.delegation]), ...disableCalls(dm, [row.delegation])]
      : disableCalls(dm, [row.delegation])
    const built = yield* builder.build({
      account,
      intentType: "delegation_revoke",
      calls,
      // An expired mandate allows nothing: its revoke reduces no risk, and is an ordinary operation (issue 41).
      riskReducing: row.expires_at.getTime() > Date.now(),
      humanSummary: `Revoke the marketplace mandate that lets ${row.delegatee_address} hire the agent ${row.agent_wallet}. ` +
        `Instant and permanent once executed: nothing can be created, approved or funded under it again.`,
      metadata: { feature: "marketplace", kind: "mandate_revoke", mandateId: row.mandate_id }
    })
    return built.build
  })

  // An executed revoke retires every mandate of the sender's account whose id its call data disables.
  yield* hooks.registerOnExecuted("delegation_revoke", "marketplace.mandates.revoke", (op, receipt) => {
    const net = chains.find(op.chainId)
    if (net === undefined) return Effect.void
    const ids = disabledPermissionIds(net.accounts, net.network.delegation.DelegationManager, op.userOp.callData as Hex)
    return ids.length === 0 ? Effect.void : rows.markRevoked({ ids, sender: op.userOp.sender, chainId: op.chainId, txHash: receipt.transactionHash })
  })

  // The account freeze disables every mandate that can be live on chain: not revoked, not expired, and
  // not already disabled there — including mandates whose enable has not settled (the owner's signature
  // may already be out). The unfreeze re-enables exactly those that are disabled and still grantable.
  yield* rules.registerFreezePlan("marketplace.mandates", (account) =>
    Effect.gen(function*() {
      const live = yield* rows.grantableOf(account.id)
      const states = yield* Effect.forEach(live, (r) => Effect.map(disabledOnChain(r.chain_id, r.mandate_id), (d) => ({ r, d })), {
        concurrency: 8
      })
      const dm = yield* dmOf(account.chainId)
      const on = states.filter((s) => !s.d).map((s) => s.r.delegation)
      const off = states.filter((s) => s.d).map((s) => s.r.delegation)
      return {
        freeze: disableCalls(dm, on),
        unfreeze: reenableCalls(dm, off),
        // One description serves both directions: a frozen account has only disabled ones, a live one only live ones.
        description: on.length > 0 ? `${on.length} marketplace mandate(s)` : off.length > 0 ? `${off.length} marketplace mandate(s)` : ""
      }
    }))

  return MandateGrants.of({ list, revoke })
})
