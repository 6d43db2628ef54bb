/** Shared steps of the approvals tests: a grant with an approval rule, signing a request's `toSign`, the delegate's own redemption. */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect, Schedule } from "effect"
import { type Address, type Hex, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type ApprovalSet, approvalArgs } from "../../src/chain/Approvals.ts"
import { Network } from "../../src/chain/Network.ts"
import type { ApprovalRequest } from "../../src/domain/Approvals.ts"
import { grant, type GrantInput, withArgs } from "../delegations/attacker.ts"
import type { Session } from "../delegations/helpers.ts"

export const USD = (n: number) => parseUnits(String(n), 6)
export const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
export const keyAddress = (s: Session) => privateKeyToAccount(s.key).address.toLowerCase() as Address

export interface RuleInput {
  readonly required: number
  readonly approvers: ReadonlyArray<string>
  readonly thresholds?: ReadonlyArray<{ readonly token: { readonly symbol: string }; readonly amount: number }>
}

/** A USDC grant (budget, per-action maximum) whose transfers above `threshold` need `rule`'s approvals. */
export const approvalGrant = (owner: Session, delegate: Session, budget: number, rule: RuleInput) =>
  Effect.gen(function*() {
    const input: GrantInput & { readonly approval: RuleInput } = {
      budgets: [{ token: { symbol: "USDC" }, amount: budget }],
      perActionMax: { token: { symbol: "USDC" }, amount: budget },
      maxActions: 20,
      approval: rule
    }
    return yield* grant(owner, delegate, input)
  })

/** An approver's `eth_signTypedData_v4` of a request's `toSign` (uint256s as bigints, as a wallet reads the decimal strings). */
export const signApproval = (key: Hex, request: ApprovalRequest) =>
  Effect.promise(() => {
    const t = request.toSign
    return privateKeyToAccount(key).signTypedData({
      domain: { ...t.domain, verifyingContract: t.domain.verifyingContract as Address },
      types: { Approval: t.types.Approval.map((f) => ({ name: f.name, type: f.type })) },
      primaryType: "Approval",
      message: {
        delegationHash: t.message.delegationHash as Hex,
        target: t.message.target as Address,
        value: BigInt(t.message.value),
        callData: t.message.callData as Hex,
        nonce: BigInt(t.message.nonce),
        deadline: BigInt(t.message.deadline)
      }
    })
  })

/** The signed grant as the delegate redeems it itself: the budget token chosen, and `set` (or nothing) as the ApprovalEnforcer's args. */
export const withApprovals = (signed: Delegation, set: ApprovalSet | undefined) =>
  Effect.map(Network, (net) => {
    const enforcers = net.delegation.caveatEnforcers
    const base = withArgs(signed, enforcers, { tokenIndex: 0 })
    return {
      ...base,
      caveats: base.caveats.map((c) =>
        c.enforcer.toLowerCase() === enforcers["ApprovalEnforcer"]!.toLowerCase() ? { ...c, args: set === undefined ? "0x" : approvalArgs(set) } : c
      )
    } as Delegation
  })

/** The request's approvals as the caveat's args, from what the approvers signed. */
export const setOf = (request: ApprovalRequest, approvals: ReadonlyArray<{ approver: string; signature: Hex }>): ApprovalSet => ({
  nonce: BigInt(request.toSign.message.nonce),
  deadline: BigInt(request.toSign.message.deadline),
  approvals: approvals.map((a) => ({ approver: a.approver as Address, signature: a.signature }))
})

/** Polls until `check` holds (the relay settles and the sweep runs in the background). */
export const eventually = <A, E, R>(read: Effect.Effect<A, E, R>, check: (a: A) => boolean, seconds = 30) =>
  read.pipe(
    Effect.flatMap((a) => check(a) ? Effect.succeed(a) : Effect.fail("not yet" as const)),
    Effect.retry(Schedule.spaced(Duration.millis(250))),
    Effect.timeout(Duration.seconds(seconds)),
    Effect.orDie
  )
