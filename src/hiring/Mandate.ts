/**
 * Hiring by mandate, the parts that need no chain: the mandate record, its id,
 * the policy it grants (what the enable operation must encode), its plain-
 * language summary, the caps checked before any job operation is built, and
 * the marketplace contract calls encoded with viem from the published ABI.
 *
 * A mandate is a delegation to `delegatee` pinned to ONE agent wallet (the
 * provider of every job it creates) with a per-job budget cap, paid from the
 * signer's smart account in the marketplace's payment token. The operation
 * builds (`Hiring.ts`) wrap these calls into user operations; the delegation
 * itself is in `MandateDelegation.ts`.
 */
import { Context, Effect, Layer, Option } from "effect"
import { encodeAbiParameters, encodeFunctionData, erc20Abi, keccak256, toFunctionSelector } from "viem"
import { BadRequest, OutOfScope } from "../api/Errors.ts"
import type { Address, Hash32, HexString, Timestamp } from "../domain/Primitives.ts"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { type AcpDeployment, acpAbi, acpDeployments } from "./AcpAbi.ts"

export interface Mandate {
  /** The delegation hash once the delegation exists (`Hiring.hire`); `draftMandate` gives a provisional salted id. */
  readonly mandateId: Hash32
  readonly signer: Address
  /** The smart account that pays. */
  readonly account: Address
  readonly chainId: number
  /** The only provider jobs under this mandate may name. */
  readonly agentWallet: Address
  /** Who may act under the mandate (the session key / agent runtime). */
  readonly delegatee: Address
  /** Cap per job, in payment-token units (USD for USDC). */
  readonly perJobBudget: number
  /** The same cap in the token's base units (decimal string). */
  readonly perJobBudgetBaseUnits: string
  readonly deployment: AcpDeployment
  /** The evaluator fixed at job creation (the shared evaluator, or the zero address for none). */
  readonly evaluator: Address
  readonly createdAt: Timestamp
}

export interface ContractCall {
  readonly to: Address
  readonly data: HexString
  readonly value: bigint
}

/** Our `Address` is pattern-checked; viem wants its template type. */
const hex = (a: Address): `0x${string}` => a as `0x${string}`

export const ZERO_ADDRESS: Address = "0x0000000000000000000000000000000000000000"

export const selectors = {
  createJob: toFunctionSelector("createJob(address,address,uint256,address,uint256,string)"),
  setBudgetWithPaymentToken: toFunctionSelector("setBudgetWithPaymentToken(uint256,uint256,address)"),
  approve: toFunctionSelector("approve(address,uint256)")
} as const

export const deploymentFor = (chainId: number, overrides: ReadonlyArray<AcpDeployment> = []) =>
  Option.fromNullishOr([...overrides, ...acpDeployments].find((d) => d.chainId === chainId))

/** A token amount in base units, exactly (no binary-float drift); none if not positive or too precise. */
export const toBaseUnits = (amount: number, decimals: number): Option.Option<bigint> => {
  if (!Number.isFinite(amount) || amount <= 0) return Option.none()
  const fixed = amount.toFixed(decimals)
  // From 1e21 on `toFixed` writes an exponent (which BigInt cannot parse); such a double is a whole number.
  if (fixed.includes("e")) return Option.some(BigInt(amount) * 10n ** BigInt(decimals))
  if (Number(fixed) !== amount && Math.abs(Number(fixed) - amount) > 10 ** -(decimals + 3)) return Option.none()
  const [whole, frac = ""] = fixed.split(".")
  const units = BigInt(whole!) * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, "0") || "0")
  return units > 0n ? Option.some(units) : Option.none()
}

/** Deterministic over what the mandate grants, plus a salt so two hires never share an id. */
export const mandateIdOf = (fields: {
  readonly signer: Address
  readonly account: Address
  readonly chainId: number
  readonly agentWallet: Address
  readonly delegatee: Address
  readonly perJobBudgetBaseUnits: bigint
  readonly salt: bigint
}): Hash32 =>
  keccak256(
    encodeAbiParameters(
      [
        { type: "string" },
        { type: "address" },
        { type: "address" },
        { type: "uint256" },
        { type: "address" },
        { type: "address" },
        { type: "uint256" },
        { type: "uint256" }
      ],
      [
        "das.marketplace.mandate.v1",
        hex(fields.signer),
        hex(fields.account),
        BigInt(fields.chainId),
        hex(fields.agentWallet),
        hex(fields.delegatee),
        fields.perJobBudgetBaseUnits,
        fields.salt
      ]
    )
  )

/** Draft a mandate from a hire request; the caller supplies the paying account and the evaluator. */
export const draftMandate = (input: {
  readonly signer: Address
  readonly account: Address
  readonly chainId: number
  readonly agentWallet: Address
  readonly delegatee: Address
  readonly perJobBudget: number
  readonly evaluator: Option.Option<Address>
  readonly now: Date
  readonly salt: bigint
  readonly deployments?: ReadonlyArray<AcpDeployment>
}): Effect.Effect<Mandate, BadRequest> =>
  Effect.gen(function*() {
    const deployment = deploymentFor(input.chainId, input.deployments)
    if (Option.isNone(deployment)) {
      return yield* new BadRequest({ message: `The marketplace is not deployed on chain ${input.chainId}.` })
    }
    const d = deployment.value
    const units = toBaseUnits(input.perJobBudget, d.paymentToken.decimals)
    if (Option.isNone(units)) {
      return yield* new BadRequest({
        message: `perJobBudget must be a positive ${d.paymentToken.symbol} amount with at most ${d.paymentToken.decimals} decimals.`
      })
    }
    if (input.delegatee.toLowerCase() === input.agentWallet.toLowerCase()) {
      return yield* new BadRequest({ message: "The agent cannot be its own client: pick another delegatee." })
    }
    return {
      mandateId: mandateIdOf({ ...input, perJobBudgetBaseUnits: units.value }),
      signer: input.signer,
      account: input.account,
      chainId: input.chainId,
      agentWallet: input.agentWallet,
      delegatee: input.delegatee,
      perJobBudget: input.perJobBudget,
      perJobBudgetBaseUnits: units.value.toString(),
      deployment: d,
      evaluator: Option.getOrElse(input.evaluator, () => ZERO_ADDRESS),
      createdAt: input.now.toISOString()
    }
  })

/**
 * What the delegation must allow, as data for the enable-operation builder:
 * three calls, each with its argument gate. Anything else is out of scope.
 */
export interface MandatePolicy {
  readonly allowedActions: ReadonlyArray<{ readonly name: string; readonly target: Address; readonly selectors: ReadonlyArray<HexString> }>
  readonly argumentGates: ReadonlyArray<{
    readonly target: Address
    readonly selector: HexString
    readonly argument: string
    readonly rule: "equals" | "at_most"
    readonly value: string
  }>
  readonly perActionMax: { readonly token: { readonly symbol: string; readonly chainId: number; readonly address: Address }; readonly amount: number }
}

export const mandatePolicy = (m: Mandate): MandatePolicy => {
  const acp = m.deployment.contract
  const token = m.deployment.paymentToken.address
  const cap = m.perJobBudgetBaseUnits
  return {
    allowedActions: [
      { name: "Create a marketplace job", target: acp, selectors: [selectors.createJob] },
      { name: "Set a job's budget", target: acp, selectors: [selectors.setBudgetWithPaymentToken] },
      { name: `Approve ${m.deployment.paymentToken.symbol} for the marketplace escrow`, target: token, selectors: [selectors.approve] }
    ],
    argumentGates: [
      { target: acp, selector: selectors.createJob, argument: "provider", rule: "equals", value: m.agentWallet },
      { target: acp, selector: selectors.createJob, argument: "evaluator", rule: "equals", value: m.evaluator },
      { target: acp, selector: selectors.createJob, argument: "paymentToken", rule: "equals", value: token },
      { target: acp, selector: selectors.createJob, argument: "budget", rule: "at_most", value: cap },
      { target: acp, selector: selectors.setBudgetWithPaymentToken, argument: "amount", rule: "at_most", value: cap },
      { target: acp, selector: selectors.setBudgetWithPaymentToken, argument: "paymentToken", rule: "equals", value: token },
      { target: token, selector: selectors.approve, argument: "spender", rule: "equals", value: acp },
      { target: token, selector: selectors.approve, argument: "amount", rule: "at_most", value: cap }
    ],
    perActionMax: {
      token: { symbol: m.deployment.paymentToken.symbol, chainId: m.chainId, address: token },
      amount: m.perJobBudget
    }
  }
}

/** `jobs/create/build`: the provider must be the mandate's agent, on the mandate's chain. */
export const checkCreate = (
  m: Mandate,
  request: { readonly agentWallet: Address; readonly chainId: number }
): Effect.Effect<void, OutOfScope | BadRequest> =>
  request.chainId !== m.chainId
    ? Effect.fail(new BadRequest({ message: `This mandate is for chain ${m.chainId}.` }))
    : request.agentWallet.toLowerCase() !== m.agentWallet.toLowerCase()
    ? Effect.fail(new OutOfScope({
      message: "This mandate only hires the agent it was granted for.",
      declineReason: "provider_not_allowed"
    }))
    : Effect.void

/** `jobs/fund/build`: a budget above the mandate's cap is declined `out_of_scope` / `cap_exceeded`. */
export const checkFund = (
  m: Mandate,
  request: { readonly perJobBudget: number; readonly chainId: number }
): Effect.Effect<bigint, OutOfScope | BadRequest> =>
  Effect.gen(function*() {
    if (request.chainId !== m.chainId) return yield* new BadRequest({ message: `This mandate is for chain ${m.chainId}.` })
    const units = toBaseUnits(request.perJobBudget, m.deployment.paymentToken.decimals)
    if (Option.isNone(units)) return yield* new BadRequest({ message: "perJobBudget must be a positive amount." })
    if (units.value > BigInt(m.perJobBudgetBaseUnits)) {
      return yield* new OutOfScope({
        message: `${request.perJobBudget} ${m.deployment.paymentToken.symbol} is above this mandate's cap of ${m.perJobBudget} per job.`,
        declineReason: "cap_exceeded",
        details: { cap: m.perJobBudget, requested: request.perJobBudget }
      })
    }
    return units.value
  })

/** `createJob(provider, evaluator, expiredAt, paymentToken, budget, metadata)` with the provider from the mandate. */
export const encodeCreateJob = (
  m: Mandate,
  job: { readonly description: string; readonly expiresAt: Date; readonly budgetBaseUnits?: bigint }
): ContractCall => ({
  to: m.deployment.contract,
  value: 0n,
  data: encodeFunctionData({
    abi: acpAbi,
    functionName: "createJob",
    args: [
      hex(m.agentWallet),
      hex(m.evaluator),
      BigInt(Math.floor(job.expiresAt.getTime() / 1000)),
      m.deployment.paymentToken.address,
      job.budgetBaseUnits ?? BigInt(m.perJobBudgetBaseUnits),
      job.description
    ]
  })
})

/** Approve-and-fund: allow the escrow exactly the budget, then set the job's budget in the payment token. */
export const encodeFund = (m: Mandate, jobId: bigint, budgetBaseUnits: bigint): ReadonlyArray<ContractCall> => [
  {
    to: m.deployment.paymentToken.address,
    value: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [m.deployment.contract, budgetBaseUnits] })
  },
  {
    to: m.deployment.contract,
    value: 0n,
    data: encodeFunctionData({
      abi: acpAbi,
      functionName: "setBudgetWithPaymentToken",
      args: [jobId, budgetBaseUnits, m.deployment.paymentToken.address]
    })
  }
]

/** `jobId` from the contract is a uint256; the API carries it as a string. */
export const parseJobId = (jobId: string): Option.Option<bigint> =>
  /^(0|[1-9][0-9]{0,76})$/.test(jobId) ? Option.some(BigInt(jobId)) : Option.none()

/**
 * A mandate as stored once its enable operation is built: the terms plus the paying
 * account's id, the Delegation Framework delegation (whose hash is `mandateId`),
 * when it expires, and the enable build.
 */
export interface MandateRecord extends Mandate {
  readonly accountId: string
  readonly delegation: Delegation
  readonly expiresAt: Timestamp
  readonly enableBuildId: string
  readonly enableUserOpHash: Hash32
  /** Set once a revoke of it executed (MandateGrants.ts). */
  readonly revokedAt?: Timestamp
}

/**
 * Where mandates live between `hire/build` and the job builds. The service runs
 * `MandatesSql` (Stores.ts); `layerMemory` is for unit tests. A mandate is only
 * ever read back by the signer who drafted it.
 */
export class Mandates extends Context.Service<Mandates, {
  save(m: MandateRecord): Effect.Effect<void>
  get(signer: Address, mandateId: Hash32): Effect.Effect<Option.Option<MandateRecord>>
}>()("das/hiring/Mandates") {
  static readonly layerMemory = Layer.sync(Mandates, () => {
    const byId = new Map<string, MandateRecord>()
    return Mandates.of({
      save: (m) => Effect.sync(() => void byId.set(m.mandateId.toLowerCase(), m)),
      get: (signer, id) =>
        Effect.sync(() => {
          const m = byId.get(id.toLowerCase())
          return m !== undefined && m.signer.toLowerCase() === signer.toLowerCase() ? Option.some(m) : Option.none()
        })
    })
  })
}
