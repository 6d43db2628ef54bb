/**
 * Replacing a grant at its agent's request (issue 25, item 3; docs/approvals.md "Asking for
 * more"). The agent's changes are checked against the grant (`preview`: the new terms, the plain
 * difference, a 400 naming the field for what cannot be); the owner's replacement build is ONE
 * operation: `DelegationManager.disableDelegation(old)`, `SpendGuard.expectUnchanged` (the old
 * grant's enforcer state is still what the carry-over was computed from), then the new grant
 * enabled with its on-chain budgets and action count lowered by what the old one spent. So the
 * new totals are limits of the whole: a redemption of the old grant between the build and the
 * operation changes the guarded state and the whole operation reverts; after it the old grant
 * is disabled. SQL: DelegationRepo.ts.
 */
import { LimitedCallsEnforcer, MultiTokenPeriodEnforcer } from "@metamask/delegation-abis"
import { Effect } from "effect"
import { type Address, decodeFunctionResult, encodeFunctionData, type Hex, hexToBigInt, keccak256, slice } from "viem"
import { BadRequest, Conflict } from "../api/Errors.ts"
import { Chains } from "../chain/Chains.ts"
import { spendGuardAbi } from "../chain/contracts/SpendGuard.ts"
import { disableCalls } from "./Caveats.ts"
import type { Carried, DelegationRow } from "./DelegationRepo.ts"
import type { PolicySet } from "./Domain.ts"
import type { BuildInput, Enable } from "./Enable.ts"
import { periodArgs } from "./Grant.ts"
import { fromUnits, toUnits } from "./Policy.ts"
import { lower, type Reads, type Signer } from "./Reads.ts"

/** What an agent may ask to change (absent: unchanged). Budgets are the new totals of the grant's own tokens. */
export interface GrantChanges {
  readonly budgets?: ReadonlyArray<{ readonly token: { readonly symbol: string }; readonly amount: number }> | undefined
  readonly perActionMax?: { readonly token: { readonly symbol: string }; readonly amount: number } | undefined
  readonly maxActions?: number | undefined
  readonly expiresAt?: string | undefined
  readonly addRecipients?: ReadonlyArray<{ readonly name: string; readonly address: string; readonly chainId: number }> | undefined
}

/** One line of the difference, in plain terms. */
export interface ChangeLine {
  readonly field: string
  readonly from: string
  readonly to: string
  readonly text: string
}

export interface ChangePreview {
  readonly row: DelegationRow
  readonly input: BuildInput
  readonly diff: ReadonlyArray<ChangeLine>
}

const bad = (message: string, field: string) => new BadRequest({ message, details: { field } })

const word = (terms: Hex, at: number) => hexToBigInt(slice(terms, at, at + 32))

export const makeReplace = (reads: Reads, enable: Enable) => Effect.gen(function*() {
  const chains = yield* Chains
  const { decimalsOf, findOwn, findUsable } = reads

  const tokenOf = (policy: PolicySet, symbol: string) => policy.budgets.find((b) => b.token.symbol.toLowerCase() === symbol.toLowerCase())?.token

  /** The grant's terms with `changes` applied, as a build takes them; the difference in plain terms. */
  const merge = (row: DelegationRow, changes: GrantChanges) =>
    Effect.gen(function*() {
      const p = row.policy_set
      if (p.revocation !== undefined) {
        return yield* bad("A revocation grant has no budget or recipients to change: revoke it and grant again", "delegationId")
      }
      if (p.budgets.some((b) => b.period !== undefined || b.stream !== undefined)) {
        return yield* bad("A grant with a renewing or streaming budget cannot be replaced (its spend does not carry over as one total)", "delegationId")
      }
      if (row.legs.length !== 1 || row.legs[0]!.scope === undefined) {
        return yield* bad("This grant was built before grants could be replaced; revoke it and grant again", "delegationId")
      }
      const diff: Array<ChangeLine> = []
      const budgets = p.budgets.map((b) => ({ token: { symbol: b.token.symbol }, amount: b.amount }))
      for (const [i, c] of (changes.budgets ?? []).entries()) {
        const token = tokenOf(p, c.token.symbol)
        if (token === undefined) {
          return yield* bad(`changes.budgets.${i}.token: ${c.token.symbol} is not a budget token of this grant (${p.budgets.map((b) => b.token.symbol).join(", ")})`, `changes.budgets.${i}.token`)
        }
        const at = budgets.findIndex((b) => b.token.symbol === token.symbol)
        const from = budgets[at]!.amount
        if (toUnits(c.amount, decimalsOf(token.address ?? "")) === undefined) {
          return yield* bad(`changes.budgets.${i}.amount must be positive with at most ${decimalsOf(token.address ?? "")} decimals`, `changes.budgets.${i}.amount`)
        }
        if (c.amount === from) continue
        budgets[at] = { token: { symbol: token.symbol }, amount: c.amount }
        diff.push({ field: `budgets.${token.symbol}`, from: `${from} ${token.symbol}`, to: `${c.amount} ${token.symbol}`, text: `Budget: ${from} ${token.symbol} → ${c.amount} ${token.symbol} in total over the grant's life` })
      }
      let perActionMax = { token: { symbol: p.perActionMax.token.symbol }, amount: p.perActionMax.amount }
      if (changes.perActionMax !== undefined && (changes.perActionMax.amount !== p.perActionMax.amount || changes.perActionMax.token.symbol.toLowerCase() !== p.perActionMax.token.symbol.toLowerCase())) {
        perActionMax = { token: { symbol: changes.perActionMax.token.symbol }, amount: changes.perActionMax.amount }
        diff.push({
          field: "perActionMax",
          from: `${p.perActionMax.amount} ${p.perActionMax.token.symbol}`,
          to: `${perActionMax.amount} ${perActionMax.token.symbol}`,
          text: `At most per action: ${p.perActionMax.amount} ${p.perActionMax.token.symbol} → ${perActionMax.amount} ${perActionMax.token.symbol}`
        })
      }
      const maxActions = changes.maxActions ?? p.maxActions
      if (maxActions !== p.maxActions) {
        diff.push({ field: "maxActions", from: String(p.maxActions), to: String(maxActions), text: `Actions in total: ${p.maxActions} → ${maxActions}` })
      }
      const expiresAt = changes.expiresAt ?? p.expiresAt
      if (Date.parse(expiresAt) !== Date.parse(p.expiresAt)) {
        diff.push({ field: "expiresAt", from: p.expiresAt, to: expiresAt, text: `Expires: ${p.expiresAt} → ${expiresAt}` })
      }
      const added = changes.addRecipients ?? []
      if (added.length > 0 && p.recipientAllowlist.length === 0) {
        return yield* bad("changes.addRecipients: this grant already pays any recipient", "changes.addRecipients")
      }
      const fresh = added.filter((r) => !p.recipientAllowlist.some((x) => lower(x.address) === lower(r.address)))
      for (const r of fresh) {
        diff.push({ field: "recipientAllowlist", from: "", to: `${r.name} (${r.address})`, text: `New recipient: ${r.name} (${r.address})` })
      }
      if (diff.length === 0) return yield* bad("changes: nothing would change (every value asked is the grant's own)", "changes")
      const input: BuildInput = {
        name: row.name,
        kind: row.kind,
        delegateeAddress: row.delegatee_address,
        chainId: row.chain_id,
        accountId: row.account_id,
        budgets,
        perActionMax,
        maxActions,
        recipientAllowlist: [...p.recipientAllowlist, ...fresh],
        allowedActions: p.allowedActions,
        expiresAt,
        ...(p.redeemers === undefined ? {} : { redeemers: { mode: p.redeemers.mode, addresses: p.redeemers.addresses } }),
        ...(p.approval === undefined ? {} : {
          approval: {
            required: p.approval.required,
            approvers: p.approval.approvers,
            thresholds: p.approval.thresholds.map((t) => ({ token: { symbol: t.token.symbol }, amount: t.amount })),
            // The same periods as the grant replaced (its start kept: what moved unapproved is counted on the new grant afresh).
            ...(p.approval.period === undefined ? {} : {
              period: { seconds: p.approval.period.seconds, start: p.approval.period.start },
              perRecipient: p.approval.perRecipient === true
            })
          }
        })
      }
      return { row, input, diff } satisfies ChangePreview
    })

  /** An agent's (or owner's) changes checked against the grant it can see: a 400 for what can never be. */
  const preview = Effect.fn("Delegations.previewChange")(function*(signer: Signer, id: string, changes: GrantChanges) {
    const row = yield* findUsable(signer, id)
    if (row.status !== "active") return yield* new Conflict({ message: `Delegation ${id} is ${row.status}: it cannot be changed`, details: { status: row.status } })
    return yield* merge(row, changes)
  })

  /**
   * What the old grant has spent and the view calls that show it (the guard's expectations):
   * per budget token `MultiTokenPeriodEnforcer.getAvailableAmount`, and `LimitedCallsEnforcer.callCounts`.
   */
  const carriedOf = (row: DelegationRow) =>
    Effect.gen(function*() {
      const net = yield* chains.serving(row.chain_id)
      const dm = net.network.delegation.DelegationManager
      const enforcers = net.network.delegation.caveatEnforcers
      const leg = row.legs[0]!
      const multi = leg.delegation.caveats.find((c) => lower(c.enforcer) === lower(enforcers["MultiTokenPeriodEnforcer"] ?? ""))
      const limited = enforcers["LimitedCallsEnforcer"]
      if (multi === undefined || limited === undefined) return yield* bad("This grant's budget is not held by MultiTokenPeriodEnforcer: it cannot be replaced", "delegationId")
      const expectations: Array<{ target: Address; data: Hex; answerHash: Hex }> = []
      const ask = (target: Address, data: Hex) =>
        Effect.map(net.chain.call({ to: target, data }), (answer) => {
          expectations.push({ target, data, answerHash: keccak256(answer) })
          return answer
        })
      const use = yield* reads.usageOf.useOf(row)
      const units: Record<string, string> = {}
      for (const [i, t] of leg.scope!.tokens.entries()) {
        const data = encodeFunctionData({ abi: MultiTokenPeriodEnforcer, functionName: "getAvailableAmount", args: [leg.permissionId, dm, multi.terms, periodArgs(i)] })
        const answer = yield* ask(enforcers["MultiTokenPeriodEnforcer"]!, data)
        const [available] = decodeFunctionResult({ abi: MultiTokenPeriodEnforcer, functionName: "getAvailableAmount", data: answer }) as readonly [bigint, boolean, bigint]
        const onChainAmount = word(multi.terms as Hex, i * 116 + 20)
        const before = BigInt(row.carried?.units[lower(t)] ?? "0")
        const chainSpent = before + onChainAmount - available
        // The service's own record, when ahead of the chain's (never expected), is the larger carry.
        const recorded = use.perToken.get(lower(t))?.executed ?? 0n
        units[lower(t)] = (chainSpent > recorded ? chainSpent : recorded).toString()
      }
      const callsAnswer = yield* ask(limited, encodeFunctionData({ abi: LimitedCallsEnforcer, functionName: "callCounts", args: [dm, leg.permissionId] }))
      const calls = Number(decodeFunctionResult({ abi: LimitedCallsEnforcer, functionName: "callCounts", data: callsAnswer }) as bigint)
      const actions = Math.max((row.carried?.actions ?? 0) + calls, use.actionsExecuted)
      return { carried: { units, actions } satisfies Carried, expectations, dm, guard: net.network.spendGuard?.address }
    }).pipe(Effect.catchTags({
      ChainUnavailable: (e) => Effect.fail(new Conflict({ message: `The chain did not answer (${e.message}); the spend to carry over cannot be read, try again` })),
      CallReverted: (e) => Effect.fail(new Conflict({ message: `The grant's enforcers did not answer (${e.message})` }))
    }))

  /** The owner's replacement build: one operation that disables the old grant, guards its spend and enables the new one. */
  const buildReplacement = Effect.fn("Delegations.buildReplacement")(function*(signer: Signer, id: string, changes: GrantChanges) {
    const old = yield* findOwn(signer, id)
    if (old.status !== "active" || Date.parse(old.policy_set.expiresAt) <= Date.now() || old.frozen) {
      const status = old.status !== "active" ? old.status : old.frozen ? "frozen" : "expired"
      return yield* new Conflict({ message: `Delegation ${id} is ${status}: it cannot be replaced`, details: { status } })
    }
    const { input, diff } = yield* merge(old, changes)
    const { carried, expectations, dm, guard } = yield* carriedOf(old)
    if (guard === undefined) return yield* bad(`Chain ${old.chain_id} names no SpendGuard contract: grants cannot be replaced there`, "delegationId")
    const spentText = old.policy_set.budgets
      .map((b) => `${fromUnits(BigInt(carried.units[lower(b.token.address ?? "")] ?? "0"), decimalsOf(b.token.address ?? ""))} ${b.token.symbol}`)
      .join(", ")
    const build = yield* enable.build(signer, input, {
      delegationId: old.id,
      carried,
      leading: [
        ...disableCalls(dm, [old.legs[0]!.delegation]),
        { to: guard, data: encodeFunctionData({ abi: spendGuardAbi, functionName: "expectUnchanged", args: [expectations] }) }
      ],
      summary: `It replaces delegation ${old.id} (${old.permission_id}), disabled by the same operation. That grant already spent ` +
        `${spentText} in ${carried.actions} action(s): the limits below are what remains of the new ones, as the chain holds them.`
    })
    return { build, diff, carried }
  })

  return { preview, buildReplacement }
})

export type Replace = Effect.Success<ReturnType<typeof makeReplace>>
