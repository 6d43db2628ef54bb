/**
 * Hiring's operation builds: hiring by mandate (`hire/build`), the job
 * creation and approve-and-fund under a mandate, and the deposit to the connected
 * managed (custodial) agent wallet. Every operation goes through the one
 * `OperationBuilder` (stored before answering, relayed through `POST /userops`).
 * Rules: docs/marketplace.md ("Hiring", "Managed deposit").
 */
import { requesterWords } from "../domain/OutsideText.ts"
import { decodeSignedMandate, mandateSummary } from "./MandateSummary.ts"
import { Config, Context, Duration, Effect, Layer, Option } from "effect"
import { encodeFunctionData, erc20Abi, getAddress, type Hex } from "viem"
import { Accounts } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, Conflict, NotFound, OutOfScope, type ServiceUnavailable } from "../api/Errors.ts"
import type { UpstreamError } from "../api/Upstream.ts"
import { type BuildError, type BuiltOperation, OperationBuilder } from "../builds/OperationBuilder.ts"
import { mapUpstream } from "../builds/Wire.ts"
import { Chains } from "../chain/Chains.ts"
import { legTypedData, randomSalt } from "../delegations/Caveats.ts"
import type { Simulation } from "../domain/Operations.ts"
import { Address } from "../domain/Primitives.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { enableCalls } from "../delegations/Caveats.ts"
import type { AcpDeployment } from "./AcpAbi.ts"
import type { HireBuild, JobOpBuild, ManagedDepositBuild } from "./Domain.ts"
import {
  checkCreate,
  checkFund,
  deploymentFor,
  draftMandate,
  encodeCreateJob,
  encodeFund,
  type MandateRecord,
  Mandates,
  parseJobId,
  toBaseUnits
} from "./Mandate.ts"
import { mandateDelegation, missingMandateEnforcers } from "./MandateDelegation.ts"
import { makeStanding } from "./MandateStanding.ts"
import { HiringMarket } from "./Market.ts"
import { HirePolicies, type HirePolicy, type HirePolicyInput } from "./IdentityPolicy.ts"
import { makePolicyLog } from "./PolicyLog.ts"
import { encodeNamedAgentTerms, requireNamedAgent } from "./NamedAgent.ts"

export interface HiringConfig {
  /** The ACP contract on the served chain; overrides the vendored deployment (required on chains without one). */
  readonly acpContract: Option.Option<Address>
  /** The payment token's symbol in the token registry, used with `acpContract`. */
  readonly paymentTokenSymbol: string
  /** How long a mandate's delegation stays redeemable. */
  readonly mandateTtl: Duration.Duration
  /** A created job's `expiredAt`, from its creation. */
  readonly jobTtl: Duration.Duration
  /** Jobs one mandate may create (enforced on chain); the total spend cap is this many per-job budgets. */
  readonly maxJobs: number
}

export const HiringConfig: Config.Config<HiringConfig> = Config.all({
  acpContract: Config.option(Config.schema(Address, "MARKETPLACE_ACP_CONTRACT")),
  paymentTokenSymbol: Config.String("MARKETPLACE_PAYMENT_TOKEN").pipe(Config.withDefault("USDC")),
  mandateTtl: Config.Duration("MARKETPLACE_MANDATE_TTL").pipe(Config.withDefault(Duration.days(30))),
  jobTtl: Config.Duration("MARKETPLACE_JOB_TTL").pipe(Config.withDefault(Duration.days(1))),
  maxJobs: Config.Int("MARKETPLACE_MANDATE_MAX_JOBS").pipe(Config.withDefault(10))
})

export interface HireInput {
  readonly agentWallet: Address
  readonly chainId: number
  readonly perJobBudget: number
  readonly delegateeAddress: Address
}
export interface CreateJobInput {
  readonly mandateId: string
  readonly agentWallet: Address
  readonly description: string
  readonly chainId: number
}
export interface FundJobInput {
  readonly mandateId: string
  readonly jobId: string
  readonly perJobBudget: number
  readonly chainId: number
}
export interface DepositInput {
  readonly chainId: number
  readonly amount: number
  readonly tokenSymbol: string
  readonly tokenAddress: Address
  /** Pay the gas in a stablecoin instead of being sponsored. */
  readonly gasToken?: "USDC" | "USDT"
}

type HireError = BadRequest | NotFound | Conflict | ServiceUnavailable | BuildError | UpstreamError
type JobError = BadRequest | NotFound | OutOfScope | BuildError

/** The simulation's decline reason when the configured marketplace contract has no code on the chain. */
export const CONTRACT_MISSING = "marketplace_contract_missing"

export class Hiring extends Context.Service<Hiring, {
  hire(signer: Address, input: HireInput): Effect.Effect<HireBuild, HireError>
  /** The signer's hire policy (docs/marketplace.md, "Hire only a named agent"). */
  policy(signer: Address): Effect.Effect<HirePolicy>
  setPolicy(signer: Address, input: HirePolicyInput): Effect.Effect<HirePolicy, BadRequest>
  createJob(signer: Address, input: CreateJobInput): Effect.Effect<JobOpBuild, JobError>
  fundJob(signer: Address, input: FundJobInput): Effect.Effect<JobOpBuild, JobError>
  managedDeposit(signer: Address, input: DepositInput): Effect.Effect<
    ManagedDepositBuild,
    BadRequest | NotFound | Conflict | BuildError
  >
}>()("das/hiring/Hiring") {}

const short = (a: string) => `${a.slice(0, 6)}…${a.slice(-4)}`
const lower = (a: string) => a.toLowerCase()

export const make = Effect.fn("Hiring.make")(function*(config: HiringConfig) {
  const market = yield* HiringMarket
  const mandates = yield* Mandates
  const accounts = yield* Accounts
  const builder = yield* OperationBuilder
  const chains = yield* Chains
  const tokens = yield* TokenRegistry
  const policies = yield* HirePolicies

  /** The marketplace deployment on a served chain: configured, else the vendored one, else a 400 (before any upstream call). */
  const deploymentOn = Effect.fn("Hiring.deploymentOn")(function*(chainId: number) {
    const { network } = yield* chains.get(chainId)
    // Configured first (`MARKETPLACE_ACP_CONTRACT`, the primary chain's); else the chain's own (`CHAINS[].acp`, or the
    // contract the local network deployed); else the vendored deployment.
    const configured = chainId === chains.primary.chainId ? config.acpContract : Option.none()
    const acp = Option.orElse(configured, () => Option.fromNullishOr(network.marketplace?.acp))
    if (Option.isSome(acp)) {
      const token = yield* tokens.resolve(chainId, config.paymentTokenSymbol)
      const deployment: AcpDeployment = {
        chainId,
        contract: getAddress(acp.value),
        paymentToken: { symbol: token.symbol, address: getAddress(token.address), decimals: token.decimals }
      }
      return [deployment]
    }
    if (Option.isNone(deploymentFor(chainId))) {
      return yield* new BadRequest({
        message: `The marketplace contract is not known on chain ${chainId}: set MARKETPLACE_ACP_CONTRACT.`
      })
    }
    return [] as ReadonlyArray<AcpDeployment>
  })

  /** Whether the marketplace contract has code on its chain; a call to an address without code "succeeds" doing nothing. */
  const contractPresent = (chainId: number, contract: string) =>
    Effect.flatMap(chains.serving(chainId), (net) => mapUpstream(net.chain.getCode(contract as Hex))).pipe(
      Effect.map((code) => code !== undefined && code !== "0x")
    )

  const missingWarning = (m: { readonly deployment: AcpDeployment; readonly chainId: number }) =>
    `There is no marketplace contract at ${m.deployment.contract} on chain ${m.chainId}: ` +
    `this operation would execute without creating or funding anything.`

  /** Honest simulation: the bundler cannot see that a call to an empty address does nothing. */
  const honest = (simulation: Simulation | null, present: boolean) => {
    if (simulation === null) return undefined
    if (present) return simulation
    return { ...simulation, willSucceed: false, declineReason: simulation.declineReason ?? CONTRACT_MISSING }
  }

  const jobAnswer = (built: BuiltOperation, present: boolean): JobOpBuild => {
    const simulation = honest(built.build.simulation, present)
    return {
      userOp: built.build.userOp,
      userOpHash: built.build.userOpHash,
      ...(built.build.buildId === undefined ? {} : { buildId: built.build.buildId }),
      ...(built.build.typedData === undefined ? {} : { typedData: built.build.typedData }),
      ...(built.build.expiresAt === undefined ? {} : { expiresAt: built.build.expiresAt }),
      ...(built.build.humanSummary === null ? {} : { humanSummary: built.build.humanSummary }),
      ...(simulation === undefined ? {} : { simulation })
    }
  }

  const mandateOf = (signer: Address, mandateId: string) =>
    Effect.flatMap(mandates.get(signer, mandateId), (found) =>
      Option.match(found, {
        onNone: () => Effect.fail(new NotFound({ message: `No mandate ${mandateId}` })),
        onSome: Effect.succeed
      }))

  const payingAccount = (signer: Address, m: MandateRecord): Effect.Effect<Account, NotFound> =>
    accounts.findById(signer, m.accountId)

  const hire = Effect.fn("Hiring.hire")(function*(signer: Address, input: HireInput) {
    const overrides = yield* deploymentOn(input.chainId)
    const { network, accounts: stack } = yield* chains.get(input.chainId)
    // By wallet only, through the upstream: an unknown wallet is a 404, never a name match.
    const agent = yield* market.agent(input.agentWallet)
    const account = yield* accounts.resolve(signer, { chainId: input.chainId })
    const evaluator = yield* market.evaluator
    const now = new Date()
    const draft = yield* draftMandate({
      signer: lower(signer),
      account: lower(account.address),
      chainId: input.chainId,
      agentWallet: lower(agent.walletAddress),
      delegatee: lower(input.delegateeAddress),
      perJobBudget: input.perJobBudget,
      evaluator: Option.map(evaluator, lower),
      now,
      salt: 0n,
      deployments: overrides
    })
    if (lower(input.delegateeAddress) === lower(account.address)) {
      return yield* new BadRequest({ message: "The paying account cannot be its own delegatee." })
    }
    const missing = missingMandateEnforcers(network.delegation)
    if (missing.length > 0) {
      // Never a mandate that enforces less than it says: without these the chain could not cage the agent.
      return yield* new BadRequest({ message: `This network has no ${missing.join(", ")}: a mandate's limits cannot be enforced on chain.` })
    }
    // Under the owner's policy, the provider must be a named ERC-8004 agent now (409 otherwise), and the mandate
    // carries the same check as a caveat the chain runs at every redemption.
    const named = yield* requireNamedAgent(
      (yield* chains.get(input.chainId)).chain.client,
      network,
      yield* policies.get(signer),
      lower(agent.walletAddress) as Hex
    )
    const expiresAt = new Date(now.getTime() + Duration.toMillis(config.mandateTtl))
    const delegation = mandateDelegation(network.delegation, draft, {
      expiresAtSeconds: Math.floor(expiresAt.getTime() / 1000),
      maxJobs: config.maxJobs,
      salt: randomSalt(),
      ...(Option.isSome(named) ? { namedAgent: encodeNamedAgentTerms(named.value.terms) } : {})
    })
    const mandateId = lower(stack.permissionIdOf(delegation))
    const terms = { ...draft, mandateId }
    // Every figure and address from the delegation the owner signs, read back from its caveats.
    const signed = decodeSignedMandate(network.delegation, delegation)
    if ("problem" in signed) return yield* Effect.die(new Error(`the built mandate cannot be stated: ${signed.problem}`))
    // The agent's name comes from the marketplace upstream: the requester's words, after the limits, quoted.
    const summary = mandateSummary(signed, input.chainId, terms.deployment.paymentToken) +
      requesterWords("The agent's name, as the marketplace gives it", agent.name) +
      (Option.isSome(named) ? requesterWords("Its ERC-8004 registration name, as the agent wrote it", named.value.registration.name) : "")
    const present = yield* contractPresent(input.chainId, terms.deployment.contract)
    const warnings = [
      ...(present ? [] : [missingWarning(terms)]),
      ...(agent.chainIds.length > 0 && !agent.chainIds.includes(input.chainId)
        ? [`The agent lists chains ${agent.chainIds.join(", ")}, not ${input.chainId}.`]
        : [])
    ]
    const dm = network.delegation.DelegationManager
    const built = yield* builder.build({
      account,
      intentType: "delegation_enable",
      calls: enableCalls(dm, [delegation]),
      humanSummary: `Enable a marketplace mandate. ${summary}`,
      simulation: { warnings },
      metadata: { feature: "marketplace", mandateId }
    })
    const simulation = built.build.simulation
    if (simulation === null) return yield* Effect.die(new Error("builder answered no simulation"))
    yield* mandates.save({
      ...terms,
      accountId: account.id,
      delegation,
      expiresAt: expiresAt.toISOString(),
      enableBuildId: built.buildId,
      enableUserOpHash: built.build.userOpHash
    })
    const td = legTypedData(delegation, network.chainId, dm)
    return {
      mandateId,
      account,
      policySummary: summary,
      enableUserOp: built.build.userOp,
      userOpHash: built.build.userOpHash,
      simulation,
      ...(built.build.buildId === undefined ? {} : { buildId: built.build.buildId }),
      ...(built.build.typedData === undefined ? {} : { typedData: built.build.typedData }),
      ...(built.build.expiresAt === undefined ? {} : { expiresAt: built.build.expiresAt }),
      delegation: {
        delegation: { ...delegation, caveats: delegation.caveats.map((c) => ({ ...c })) },
        typedData: {
          domain: { ...td.domain, verifyingContract: lower(td.domain.verifyingContract) },
          types: Object.fromEntries(Object.entries(td.types).map(([k, v]) => [k, v.map((f) => ({ ...f }))])),
          primaryType: td.primaryType,
          message: { ...td.message, caveats: td.message.caveats.map((c) => ({ ...c })), salt: BigInt(td.message.salt).toString() }
        }
      },
      mandateExpiresAt: expiresAt.toISOString()
    } satisfies HireBuild
  })

  /** A mandate past its expiry would be refused on chain; the service refuses to build under it. */
  const live = (m: MandateRecord) =>
    new Date(m.expiresAt).getTime() > Date.now()
      ? Effect.void
      : Effect.fail(new BadRequest({ message: `The mandate expired at ${m.expiresAt}; hire again.` }))

  const standing = makeStanding(chains)

  const createJob = Effect.fn("Hiring.createJob")(function*(signer: Address, input: CreateJobInput) {
    const m = yield* mandateOf(signer, input.mandateId)
    yield* checkCreate(m, input)
    yield* standing(m, {})
    yield* live(m)
    const account = yield* payingAccount(signer, m)
    const jobExpiresAt = new Date(Date.now() + Duration.toMillis(config.jobTtl))
    const call = encodeCreateJob(m, { description: input.description, expiresAt: jobExpiresAt })
    const present = yield* contractPresent(m.chainId, m.deployment.contract)
    const built = yield* builder.build({
      account,
      intentType: "send",
      calls: [{ to: call.to as Hex, data: call.data as Hex, value: call.value }],
      humanSummary: `Create a marketplace job for the agent ${short(m.agentWallet)} (the provider this mandate pins) ` +
        `with a budget of at most ${m.perJobBudget} ${m.deployment.paymentToken.symbol}, expiring ${jobExpiresAt.toISOString()}. ` +
        `Nothing is paid yet.`,
      simulation: { warnings: present ? [] : [missingWarning(m)] },
      metadata: { feature: "marketplace", kind: "job_create", mandateId: m.mandateId }
    })
    return jobAnswer(built, present)
  })

  const fundJob = Effect.fn("Hiring.fundJob")(function*(signer: Address, input: FundJobInput) {
    const m = yield* mandateOf(signer, input.mandateId)
    const units = yield* checkFund(m, input)
    yield* standing(m, { fundUnits: units })
    yield* live(m)
    const jobId = parseJobId(input.jobId)
    if (Option.isNone(jobId)) return yield* new BadRequest({ message: "jobId must be the job's on-chain id (a decimal integer)." })
    const account = yield* payingAccount(signer, m)
    const present = yield* contractPresent(m.chainId, m.deployment.contract)
    const token = m.deployment.paymentToken
    const built = yield* builder.build({
      account,
      intentType: "send",
      calls: encodeFund(m, jobId.value, units).map((c) => ({ to: c.to as Hex, data: c.data as Hex, value: c.value })),
      humanSummary: `Allow the marketplace escrow ${short(m.deployment.contract)} to take ${input.perJobBudget} ${token.symbol} ` +
        `and set job ${input.jobId}'s budget to it (cap ${m.perJobBudget} ${token.symbol} per job). The escrow releases ` +
        `it to the agent ${short(m.agentWallet)} only when the work is accepted.`,
      simulation: {
        amountIn: { token: { symbol: token.symbol, chainId: m.chainId, address: lower(token.address) }, amount: input.perJobBudget },
        warnings: present ? [] : [missingWarning(m)]
      },
      metadata: { feature: "marketplace", kind: "job_fund", mandateId: m.mandateId, jobId: input.jobId, units: units.toString() }
    })
    return jobAnswer(built, present)
  })

  const managedDeposit = Effect.fn("Hiring.managedDeposit")(function*(signer: Address, input: DepositInput) {
    yield* chains.get(input.chainId)
    const wallet = yield* market.managedWallet(signer)
    if (Option.isNone(wallet)) {
      return yield* new Conflict({ message: "No managed agent wallet is connected: connect one first (POST /marketplace/managed/connect)." })
    }
    const token = yield* tokens.resolve(input.chainId, input.tokenSymbol)
    if (lower(token.address) !== lower(input.tokenAddress)) {
      return yield* new BadRequest({
        message: `tokenAddress is not ${token.symbol}'s address on chain ${input.chainId} (${token.address}).`,
        details: { tokenSymbol: token.symbol, expected: token.address, got: input.tokenAddress }
      })
    }
    const units = toBaseUnits(input.amount, token.decimals)
    if (Option.isNone(units)) {
      return yield* new BadRequest({ message: `amount must be a positive ${token.symbol} amount with at most ${token.decimals} decimals.` })
    }
    const account = yield* accounts.resolve(signer, { chainId: input.chainId })
    const to = lower(wallet.value)
    const custodyLabel = `Custodial: ${input.amount} ${token.symbol} leaves your custody. It moves from your account ` +
      `${account.address} to the managed agent wallet ${to}, which the marketplace holds for you; this service and your ` +
      `keys cannot move it back, and only the marketplace can.`
    const built = yield* builder.build({
      account,
      intentType: "managed_deposit",
      ...(input.gasToken === undefined ? {} : { gasToken: input.gasToken }),
      calls: [{
        to: token.address as Hex,
        data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to as Hex, units.value] }),
        value: 0n
      }],
      humanSummary: `Send ${input.amount} ${token.symbol} from your account ${short(account.address)} to your managed agent ` +
        `wallet ${short(to)}. ${custodyLabel}`,
      simulation: {
        amountIn: { token: { symbol: token.symbol, chainId: input.chainId, address: lower(token.address) }, amount: input.amount },
        warnings: ["The funds leave your custody: the managed agent wallet is held by the marketplace, not by you."]
      },
      metadata: { feature: "marketplace", kind: "managed_deposit", managedWallet: to, units: units.value.toString() }
    })
    return { ...built.build, custodial: true, custodyLabel, managedAgentWallet: to } satisfies ManagedDepositBuild
  })

  const policy = (signer: Address) => policies.get(signer)
  // Stored and appended to the owner's log together (PolicyLog.ts).
  const setPolicy = yield* makePolicyLog

  return Hiring.of({ hire, policy, setPolicy, createJob, fundJob, managedDeposit })
})

/** Requires the marketplace port (`HiringMarket`), the mandates, the accounts, the one builder, the chains and the token registry. */
export const HiringLive = Layer.effect(
  Hiring,
  Effect.gen(function*() {
    return yield* make(yield* HiringConfig)
  })
)
