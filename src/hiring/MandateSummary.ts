/**
 * A mandate's summary written from the delegation the owner signs: its caveats (MandateDelegation.ts)
 * read back, every figure and address the chain holds, nothing from the request or the marketplace
 * upstream. The agent's name, which the upstream gives, is the caller's to append after it, quoted
 * (src/domain/OutsideText.ts). A mandate whose caveats are not the expected shape cannot be stated.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { type Address, formatUnits, type Hex, hexToBigInt, size, slice } from "viem"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { decodeCaveatGroups, pinnedAddress, word } from "../delegations/SignedTerms.ts"
import { MANDATE_GROUPS } from "./MandateDelegation.ts"
import { selectors } from "./Mandate.ts"
import { decodeNamedAgentTerms, type NamedAgentTerms, wadText } from "./NamedAgent.ts"

const ZERO = "0x0000000000000000000000000000000000000000"

export interface SignedMandate {
  readonly delegate: Address
  readonly delegator: Address
  readonly expiresAtSeconds: number
  readonly token: Address
  /** The only spender `approve` may name: the marketplace escrow. */
  readonly escrow: Address
  /** The ACP contract jobs are created and funded on. */
  readonly acp: Address
  readonly agent: Address
  readonly evaluator: Address
  readonly perJobUnits: bigint
  readonly totalUnits: bigint
  readonly maxJobs: bigint
  /** Under the owner's hire policy: the ERC-8004 agent the chain checks at every redemption. */
  readonly named?: NamedAgentTerms
}

type Caveat = { readonly enforcer: string; readonly terms: Hex }

/** The mandate's limits as its caveats hold them, or why they cannot be read. */
export const decodeSignedMandate = (environment: DelegationEnvironment, delegation: Delegation): SignedMandate | { readonly problem: string } => {
  const names = new Map(Object.entries(environment.caveatEnforcers).map(([n, a]) => [a.toLowerCase(), n]))
  const nameOf = (c: Caveat) => names.get(c.enforcer.toLowerCase())
  const lower = (h: Hex) => h.toLowerCase() as Address
  try {
    const [timestamp, valueLte, wrapper, identity, ...rest] = delegation.caveats as ReadonlyArray<Caveat>
    if (rest.length > 0 || timestamp === undefined || valueLte === undefined || wrapper === undefined) throw new Error("not the mandate's three caveats")
    if (nameOf(timestamp) !== "TimestampEnforcer" || nameOf(valueLte) !== "ValueLteEnforcer" || nameOf(wrapper) !== "LogicalOrWrapperEnforcer") {
      throw new Error("not the mandate's enforcers")
    }
    const named = identity === undefined ? undefined : nameOf(identity) === "AgentIdentityEnforcer"
      ? decodeNamedAgentTerms(identity.terms)
      : { problem: "a caveat the mandate does not have" }
    if (named !== undefined && "problem" in named) throw new Error(named.problem)
    if (size(timestamp.terms) !== 32 || hexToBigInt(slice(timestamp.terms, 0, 16)) !== 0n) throw new Error("an expiry with a start")
    if (size(valueLte.terms) !== 32 || word(valueLte.terms, 0) !== 0n) throw new Error("ETH attached to a call")
    const groups = decodeCaveatGroups(wrapper.terms)
    if (groups.length !== 3) throw new Error("not the mandate's three calls")
    /** One group: its target, its selector, the words it pins (offset → address) and its argument cap. */
    const group = (index: number, selector: Hex) => {
      const caveats = groups[index]!
      const pins = new Map<bigint, Address>()
      let target: Address | undefined
      let cap: { offset: bigint; perCall: bigint; total: bigint } | undefined
      let limit: bigint | undefined
      for (const c of caveats) {
        switch (nameOf(c)) {
          case "AllowedTargetsEnforcer":
            if (size(c.terms) !== 20) throw new Error("a call to more than one contract")
            target = lower(c.terms)
            break
          case "AllowedMethodsEnforcer":
            if (c.terms.toLowerCase() !== selector) throw new Error("a call to another function")
            break
          case "AllowedCalldataEnforcer": {
            const pinned = pinnedAddress(c.terms)
            pins.set(pinned.offset, pinned.address)
            break
          }
          case "ArgumentCapEnforcer":
            cap = { offset: word(c.terms, 0), perCall: word(c.terms, 32), total: word(c.terms, 64) }
            break
          case "LimitedCallsEnforcer":
            limit = word(c.terms, 0)
            break
          default:
            throw new Error("a caveat the mandate does not have")
        }
      }
      if (target === undefined || cap === undefined) throw new Error("a call without its target or cap")
      return { target, pins, cap, limit }
    }
    const approve = group(MANDATE_GROUPS.approve, selectors.approve)
    const create = group(MANDATE_GROUPS.createJob, selectors.createJob)
    const fund = group(MANDATE_GROUPS.setBudget, selectors.setBudgetWithPaymentToken)
    const pin = (g: ReturnType<typeof group>, offset: number) => {
      const a = g.pins.get(BigInt(offset))
      if (a === undefined) throw new Error(`no pinned word at ${offset}`)
      return a
    }
    const token = approve.target
    if (create.target !== fund.target || pin(create, 100) !== token || pin(fund, 68) !== token) throw new Error("two different tokens or contracts")
    const caps = [approve.cap, create.cap, fund.cap]
    if (caps.some((c) => c.perCall !== approve.cap.perCall || c.total !== approve.cap.total)) throw new Error("caps that differ between calls")
    if (create.limit === undefined || approve.limit !== undefined || fund.limit !== undefined) throw new Error("the job count is not on job creation alone")
    if (named !== undefined && named.provider !== pin(create, 4)) throw new Error("a named agent that is not the provider")
    return {
      ...(named === undefined ? {} : { named }),
      delegate: lower(delegation.delegate as Hex),
      delegator: lower(delegation.delegator as Hex),
      expiresAtSeconds: Number(hexToBigInt(slice(timestamp.terms, 16, 32))),
      token,
      escrow: pin(approve, 4),
      acp: create.target,
      agent: pin(create, 4),
      evaluator: pin(create, 36),
      perJobUnits: approve.cap.perCall,
      totalUnits: approve.cap.total,
      maxJobs: create.limit
    }
  } catch (cause) {
    return { problem: cause instanceof Error ? cause.message : String(cause) }
  }
}

/** The mandate in plain language: exactly what its caveats hold (the token named by the service's registry). */
export const mandateSummary = (m: SignedMandate, chainId: number, token: { readonly symbol: string; readonly decimals: number }): string => {
  const amount = (units: bigint) => `${formatUnits(units, token.decimals)} ${token.symbol}`
  const accepted = m.evaluator === ZERO ? "you accept" : `the evaluator ${m.evaluator} accepts`
  return `Lets ${m.delegate} hire the marketplace agent ${m.agent} — and no other — on chain ${chainId}, paying at most ` +
    `${amount(m.perJobUnits)} per job from your account ${m.delegator}, at most ${m.maxJobs} jobs and ${amount(m.totalUnits)} in all, ` +
    `until ${new Date(m.expiresAtSeconds * 1000).toISOString()}. It can only create jobs for that agent on ${m.acp} with ` +
    `${m.evaluator === ZERO ? "you as evaluator" : `the evaluator ${m.evaluator}`}, approve the marketplace escrow ${m.escrow} (and no one else) ` +
    `for at most one job's budget, and fund a job up to that budget; it cannot send ETH or call anything else. ` +
    `The chain enforces each of these limits. Each job's ${token.symbol} is held in the marketplace escrow and released to the agent only ` +
    `when ${accepted} the work. You can revoke this at any time.` + namedAgentSentence(m)
}

/** What the AgentIdentityEnforcer caveat holds, in words (nothing without it). */
const namedAgentSentence = (m: SignedMandate): string => {
  const n = m.named
  if (n === undefined) return ""
  const floor = n.floor === undefined
    ? ""
    : ` and its reputation in the ERC-8004 Reputation Registry ${n.floor.reputationRegistry}, from the reviewers ` +
      `${n.floor.clients.join(", ")} alone, averages at least ${wadText(n.floor.minWad)} over at least one feedback`
  return ` Every use also needs ERC-8004 agent ${n.agentId} of the Identity Registry ${n.identityRegistry} to have ${n.provider} ` +
    `as its agent wallet${floor}; the chain checks this each time, so the mandate stops working if that changes.`
}
