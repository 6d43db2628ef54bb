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
import { SqlClient } from "effect/sql"
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
import type { MandateRecord } from "./Mandate.ts"

export class MandateGrants extends Context.Service<MandateGrants, {
  list(signer: Address): Effect.Effect<ReadonlyArray<MandateSummary>>
  revoke(signer: Address, mandateId: string): Effect.Effect<UserOpBuild, BadRequest | NotFound | BuildError>
}>()("das/hiring/MandateGrants") {
  static readonly layer = Layer.effect(MandateGrants, Effect.suspend(() => make))
}

interface Row {
  readonly mandate_id: string
  readonly account_id: string
  readonly account_address: string
  readonly chain_id: number
  readonly agent_wallet: string
  readonly delegatee_address: string
  readonly per_job_budget: number
  readonly evaluator: string
  readonly delegation: MandateRecord["delegation"]
  readonly created_at: Date
  readonly expires_at: Date
  readonly revoked_at: Date | null
  readonly revoke_tx_hash: string | null
  readonly enable_status: string | null
  readonly frozen: boolean
}

const lower = (s: string) => s.toLowerCase()

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const accounts = yield* Accounts
  const builder = yield* OperationBuilder
  const chains = yield* Chains
  const rules = yield* AccountRules
  const hooks = yield* RelayHooks
  const dmOf = (chainId: number) => Effect.map(chains.serving(chainId), (net) => net.network.delegation.DelegationManager)

  const select = (where: ReturnType<typeof sql.and>) =>
    sql<Row>`
      SELECT m.mandate_id, m.account_id, m.account_address, m.chain_id, m.agent_wallet, m.delegatee_address,
             m.per_job_budget, m.evaluator, m.delegation, m.created_at, m.expires_at, m.revoked_at, m.revoke_tx_hash,
             (SELECT o.outcome FROM user_operations o WHERE o.user_op_hash = m.enable_user_op_hash
              ORDER BY (o.outcome = 'mined') DESC LIMIT 1) AS enable_status,
             a.frozen
      FROM marketplace_mandates m JOIN accounts a ON a.id = m.account_id
      WHERE ${where} ORDER BY m.created_at DESC`.pipe(Effect.orDie)

  const statusOf = (r: Row, now: Date): MandateSummary["status"] =>
    r.revoked_at !== null
      ? "revoked"
      : r.expires_at.getTime() <= now.getTime()
      ? "expired"
      : r.enable_status !== "mined"
      ? "pending"
      : r.frozen
      ? "frozen"
      : "active"

  const toSummary = (r: Row, now: Date): MandateSummary => ({
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
    const rows = yield* select(sql.and([sql`m.signer_address = ${lower(signer)}`]))
    const now = new Date()
    return rows.map((r) => toSummary(r, now))
  })

  const revoke = Effect.fn("MandateGrants.revoke")(function*(signer: Address, mandateId: string) {
    const rows = yield* select(sql.and([sql`m.signer_address = ${lower(signer)}`, sql`m.mandate_id = ${lower(mandateId)}`]))
    const row = rows[0]
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
    const ids = disabledPermissionIds(net.accounts, net.network.delegation.DelegationManager, op.userOp.callData as Hex).map(lower)
    return ids.length === 0 ? Effect.void : sql`
      UPDATE marketplace_mandates SET revoked_at = now(), revoke_tx_hash = ${lower(receipt.transactionHash)}
      WHERE mandate_id IN ${sql.in(ids)} AND lower(account_address) = ${lower(op.userOp.sender)} AND chain_id = ${op.chainId}
        AND revoked_at IS NULL`
      .pipe(Effect.orDie, Effect.asVoid)
  })

  // The account freeze disables every mandate that can be live on chain: not revoked, not expired, and
  // not already disabled there — including mandates whose enable has not settled (the owner's signature
  // may already be out). The unfreeze re-enables exactly those that are disabled and still grantable.
  yield* rules.registerFreezePlan("marketplace.mandates", (account) =>
    Effect.gen(function*() {
      const rows = yield* select(sql.and([
        sql`m.account_id = ${account.id}`,
        sql`m.revoked_at IS NULL`,
        sql`m.expires_at > now()`
      ]))
      const states = yield* Effect.forEach(rows, (r) => Effect.map(disabledOnChain(r.chain_id, r.mandate_id), (d) => ({ r, d })), {
        concurrency: 8
      })
      const dm = yield* dmOf(account.chainId)
      const live = states.filter((s) => !s.d).map((s) => s.r.delegation)
      const off = states.filter((s) => s.d).map((s) => s.r.delegation)
      return {
        freeze: disableCalls(dm, live),
        unfreeze: reenableCalls(dm, off),
        // One description serves both directions: a frozen account has only disabled ones, a live one only live ones.
        description: live.length > 0 ? `${live.length} marketplace mandate(s)` : off.length > 0 ? `${off.length} marketplace mandate(s)` : ""
      }
    }))

  return MandateGrants.of({ list, revoke })
})
