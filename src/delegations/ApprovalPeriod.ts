/**
 * A per-period approval threshold (issue 44) as the service checks it before the chain does: what
 * already moved without approvals in the period (the ApprovalEnforcer's own count, read from the
 * chain) plus this grant's open actions that no approval request holds, plus this action. Above the
 * threshold the action becomes an approval request, so the agent never meets the chain's refusal.
 * The open actions are read before the chain, so one that executes between the two reads is counted
 * twice (more approvals asked for), never missed. docs/approvals.md, "Per period".
 */
import { Effect } from "effect"
import type { Address, Hash, Hex } from "viem"
import { approvalTerms, type ApprovalRule, transferRecipient, unapprovedInPeriod } from "../chain/Approvals.ts"
import type { ChainNetwork } from "../chain/Chains.ts"
import type { ChainUnavailable } from "../chain/Chain.ts"
import type { DelegationRepo } from "./DelegationRepo.ts"

export interface PeriodUse {
  /** What counts towards the threshold before this action: moved without approvals in the period, and open. */
  readonly unapproved: bigint
  /** Whether the first period has started by the chain's clock (before it, every transfer needs approvals). */
  readonly started: boolean
}

/** What counts before `execution` under a per-period `rule` (`undefined` for a per-transfer rule or a call that is no transfer). */
export const periodUse = (
  repo: DelegationRepo["Service"],
  net: ChainNetwork,
  input: {
    readonly rule: ApprovalRule
    readonly enforcer: Address
    readonly delegationId: string
    readonly permissionId: string
    readonly reservationId: string
    readonly execution: { readonly target: Address; readonly callData: Hex }
  }
): Effect.Effect<PeriodUse | undefined, ChainUnavailable> =>
  Effect.gen(function*() {
    const window = input.rule.window
    if (window === undefined || input.execution.callData.length !== 2 + 68 * 2) return undefined
    const recipient = transferRecipient(input.execution.callData)
    const open = yield* repo.openUnapproved(input.delegationId, input.execution.target, window.perRecipient ? recipient : undefined, input.reservationId)
    const counted = yield* unapprovedInPeriod(net.chain, {
      enforcer: input.enforcer,
      caller: net.network.delegation.DelegationManager,
      delegationHash: input.permissionId as Hash,
      terms: approvalTerms(input.rule),
      token: input.execution.target,
      recipient
    })
    return { unapproved: counted.spent + open, started: counted.periodEnd > BigInt(window.startSeconds) }
  })
