/**
 * A mandate on the MetaMask Delegation Framework: one delegation from the paying account
 * to the delegatee whose caveats make the chain enforce the whole mandate, so that a
 * hostile agent redeeming it by itself (not through the service) can do nothing else.
 * Mapping and the tests that prove it: docs/marketplace.md ("The mandate on chain").
 *
 * Caveats, in the order the DelegationManager runs them:
 * - `Timestamp(before = expiry)`;
 * - `ValueLte(0)`: no native value;
 * - `LogicalOrWrapper` with one group per allowed call; the redeemer picks the group
 *   (args are not signed; every caveat of the picked group must pass):
 *   0. `approve(spender, amount)` on the payment token: `AllowedTargets(token)`,
 *      `AllowedMethods(approve)`, `AllowedCalldata(spender = the ACP contract)`,
 *      `ArgumentCap(amount ≤ per-job budget, Σ ≤ total)`;
 *   1. `createJob(provider, evaluator, expiredAt, paymentToken, budget, metadata)` on the ACP
 *      contract: `AllowedTargets(acp)`, `AllowedMethods(createJob)`, `AllowedCalldata` pinning
 *      provider = the agent's wallet, evaluator = the mandate's evaluator and paymentToken,
 *      `ArgumentCap(budget ≤ per-job budget)`, `LimitedCalls(jobs)`: the job count;
 *   2. `setBudgetWithPaymentToken(jobId, amount, paymentToken)` on the ACP contract (it pulls
 *      the escrow): `AllowedTargets(acp)`, `AllowedMethods(setBudget…)`, `AllowedCalldata`
 *      pinning paymentToken, `ArgumentCap(amount ≤ per-job budget, Σ ≤ total)`.
 * - under the owner's hire policy, `AgentIdentityEnforcer` (AgentIdentity.sol): the provider is still the
 *   ERC-8004 agent's `agentWallet` and, with a floor, its reputation from the named reviewers at or above it.
 * The total spend cap is `perJobBudget × maxJobs`. `ArgumentCap` keeps its totals per
 * function selector, so the approvals and the escrow pulls are each capped at the total.
 */
import { type Delegation, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder } from "@metamask/smart-accounts-kit/utils"
import { type Address, encodePacked, type Hex, hexToBigInt, pad } from "viem"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { logicalOrArgs, logicalOrTerms } from "../delegations/Grant.ts"
import { decodeCaveatGroups, word as termsWord } from "../delegations/SignedTerms.ts"
import { type Mandate, selectors } from "./Mandate.ts"

export interface MandateDelegationTerms {
  /** Unix seconds; the TimestampEnforcer refuses redemptions at or after it. */
  readonly expiresAtSeconds: number
  /** How many jobs the mandate may create; the total spend cap is this many per-job budgets. */
  readonly maxJobs: number
  readonly salt: Hex
  /**
   * Under the owner's hire policy: `AgentIdentityEnforcer` terms (NamedAgent.ts), a fourth caveat on
   * every redemption: the ERC-8004 agent still bound to the provider's wallet, its reputation at the floor.
   */
  readonly namedAgent?: Hex
}

/** The group a redemption selects, by the call it makes. */
export const MANDATE_GROUPS = { approve: 0, createJob: 1, setBudget: 2 } as const
/** Caveats in each group, in order (the LogicalOrWrapper wants one args entry per caveat). */
const GROUP_SIZES = [4, 7, 4] as const

const REQUIRED = [
  "TimestampEnforcer",
  "ValueLteEnforcer",
  "AllowedTargetsEnforcer",
  "AllowedMethodsEnforcer",
  "AllowedCalldataEnforcer",
  "LimitedCallsEnforcer",
  "LogicalOrWrapperEnforcer",
  "ArgumentCapEnforcer"
] as const

/** The enforcers a mandate needs that this network lacks (none: every limit holds on chain). */
export const missingMandateEnforcers = (environment: DelegationEnvironment): ReadonlyArray<string> =>
  REQUIRED.filter((name) => environment.caveatEnforcers[name] === undefined)

const word = (a: string): Hex => pad(a.toLowerCase() as Hex, { size: 32 })
/** AllowedCalldataEnforcer terms: the 32-byte word at `offset` (from the selector's first byte) must equal `value`. */
const pinned = (offset: number, value: string): Hex => encodePacked(["uint256", "bytes32"], [BigInt(offset), word(value)])
/** ArgumentCapEnforcer terms: offset ‖ maxPerCall ‖ maxTotal. */
const capped = (offset: number, perCall: bigint, total: bigint): Hex =>
  encodePacked(["uint256", "uint256", "uint256"], [BigInt(offset), perCall, total])

export const mandateDelegation = (
  environment: DelegationEnvironment,
  m: Mandate,
  terms: MandateDelegationTerms
): Delegation => {
  const env = environment.caveatEnforcers
  const enforcer = (name: (typeof REQUIRED)[number]) => env[name] as Address
  const acp = m.deployment.contract
  const token = m.deployment.paymentToken.address
  const perJob = BigInt(m.perJobBudgetBaseUnits)
  const total = perJob * BigInt(terms.maxJobs)
  const kit = () => createCaveatBuilder(environment as never)
  const target = (address: string, selector: Hex) =>
    kit().addCaveat("allowedTargets", { targets: [address as Hex] }).addCaveat("allowedMethods", { selectors: [selector] }).build()
  const calldata = (name: string, t: Hex) => ({ enforcer: enforcer(name as (typeof REQUIRED)[number]), terms: t })
  const groups = [
    [
      ...target(token, selectors.approve),
      calldata("AllowedCalldataEnforcer", pinned(4, acp)),
      calldata("ArgumentCapEnforcer", capped(36, perJob, total))
    ],
    [
      ...target(acp, selectors.createJob),
      calldata("AllowedCalldataEnforcer", pinned(4, m.agentWallet)),
      calldata("AllowedCalldataEnforcer", pinned(36, m.evaluator)),
      calldata("AllowedCalldataEnforcer", pinned(100, token)),
      calldata("ArgumentCapEnforcer", capped(132, perJob, total)),
      ...kit().addCaveat("limitedCalls", { limit: terms.maxJobs }).build()
    ],
    [
      ...target(acp, selectors.setBudgetWithPaymentToken),
      calldata("AllowedCalldataEnforcer", pinned(68, token)),
      calldata("ArgumentCapEnforcer", capped(36, perJob, total))
    ]
  ]
  const head = kit()
    .addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: terms.expiresAtSeconds })
    .addCaveat("valueLte", { maxValue: 0n })
    .build()
  return {
    delegate: m.delegatee as Hex,
    delegator: m.account as Hex,
    authority: ROOT_AUTHORITY as Hex,
    caveats: [
      ...head.map((c) => ({ ...c, args: "0x" as Hex })),
      { enforcer: enforcer("LogicalOrWrapperEnforcer"), terms: logicalOrTerms(groups), args: "0x" as Hex },
      ...(terms.namedAgent === undefined
        ? []
        : [{ enforcer: env["AgentIdentityEnforcer"] as Address, terms: terms.namedAgent, args: "0x" as Hex }])
    ],
    salt: terms.salt,
    signature: "0x"
  }
}

/** The signed mandate with the wrapper's args selecting `group` (what a redeemer sets). */
export const mandateRedeemArgs = (
  environment: DelegationEnvironment,
  mandate: Delegation,
  group: keyof typeof MANDATE_GROUPS
): Delegation => {
  const wrapper = environment.caveatEnforcers["LogicalOrWrapperEnforcer"]?.toLowerCase()
  const index = MANDATE_GROUPS[group]
  return {
    ...mandate,
    caveats: mandate.caveats.map((c) =>
      c.enforcer.toLowerCase() === wrapper ? { ...c, args: logicalOrArgs(index, GROUP_SIZES[index]) } : c
    )
  }
}

/** The signed limits of a mandate, read back from its own caveats: the job count and the total spend cap. */
export const mandateLimits = (environment: DelegationEnvironment, mandate: Delegation): { maxJobs: bigint; total: bigint } | undefined => {
  const wrapper = environment.caveatEnforcers["LogicalOrWrapperEnforcer"]?.toLowerCase()
  const caveat = mandate.caveats.find((c) => c.enforcer.toLowerCase() === wrapper)
  if (caveat === undefined) return undefined
  const create = decodeCaveatGroups(caveat.terms as Hex)[MANDATE_GROUPS.createJob] ?? []
  const limited = create.find((c) => c.enforcer.toLowerCase() === environment.caveatEnforcers["LimitedCallsEnforcer"]?.toLowerCase())
  const cap = create.find((c) => c.enforcer.toLowerCase() === environment.caveatEnforcers["ArgumentCapEnforcer"]?.toLowerCase())
  if (limited === undefined || cap === undefined) return undefined
  return { maxJobs: hexToBigInt(limited.terms as Hex), total: termsWord(cap.terms as Hex, 64) }
}
