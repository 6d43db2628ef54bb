/**
 * The one operation builder. Every build endpoint (account rules, delegations,
 * marketplace, ...) gives it an account, an intent, the calls (or raw call data) and a
 * summary; it answers the contract's `UserOpBuild`: nonce from the EntryPoint,
 * factory data while the account is counterfactual, gas from the bundler's estimation
 * (stub signature + paymaster stub), fees from the chain, sponsorship by the paymaster,
 * the viem `userOpHash`, the EIP-712 typed data the owner signs, and a simulation.
 * The build is stored before it is answered: the relay only accepts operations that
 * match a stored build (docs/relay.md).
 */
import { Config, Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { type Address, formatUnits, type Hex } from "viem"
import type { Account } from "../accounts/Domain.ts"
import { OutOfScope, ServiceUnavailable, type UpstreamTimeout, type UpstreamUnavailable } from "../api/Errors.ts"
import { AccountStack, type Call } from "../chain/Accounts4337.ts"
import { Bundler, type BundlerRejected, type GasEstimate, type UserOperationV07 } from "../chain/Bundler.ts"
import { Chain } from "../chain/Chain.ts"
import { Network } from "../chain/Network.ts"
import { Paymaster } from "../chain/Paymaster.ts"
import {
  type IntentType,
  type Simulation,
  type TokenAmount,
  UserOperation,
  type UserOpBuild
} from "../domain/Operations.ts"
import { ACCOUNT_FROZEN, allowedWhileFrozen, isRiskReducingIntent } from "./Intents.ts"
import { mapUpstream, toWire, typedDataJson, userOpHashOf } from "./Wire.ts"

export type { Call }

export interface BuildRequest {
  /** The account the operation runs as (from `Accounts.resolve`, i.e. already scoped to the signer). */
  readonly account: Account
  readonly intentType: IntentType
  /** Calls the account executes (`execute`, batched when several). Exactly one of `calls` / `callData`. */
  readonly calls?: ReadonlyArray<Call>
  /** Raw call data on the account itself (e.g. `disableDelegation(...)`). */
  readonly callData?: Hex
  /** Plain-language statement of what the operation does. */
  readonly humanSummary: string
  /** Defaults to the intent's (freeze, revoke); set true for e.g. a withdraw to safety. */
  readonly riskReducing?: boolean
  /** What the feature knows about amounts and route, shown in the simulation. */
  readonly simulation?: Partial<Pick<Simulation, "amountIn" | "amountOut" | "rate" | "route" | "slippageBps">> & {
    readonly fees?: ReadonlyArray<TokenAmount>
    readonly warnings?: ReadonlyArray<string>
  }
  /** The building feature's own facts (delegation id, amounts, ...), stored with the build and given back at the relay. */
  readonly metadata?: Schema.JsonObject
}

export interface BuiltOperation {
  readonly buildId: string
  /** The contract's response (with `buildId`, `typedData` and `expiresAt` added). */
  readonly build: UserOpBuild
  /** The same operation as viem sees it (bigints), unsigned. */
  readonly userOp: UserOperationV07
}

/** A stored build, as the relay and the features read it back. */
export interface StoredBuild {
  readonly id: string
  readonly accountId: string
  readonly signerAddress: string
  readonly intentType: IntentType
  readonly chainId: number
  readonly entryPoint: string
  readonly sender: string
  readonly nonce: string
  readonly callData: string
  readonly userOp: UserOperation
  readonly userOpHash: string
  readonly riskReducing: boolean
  readonly sponsored: boolean
  readonly humanSummary: string | null
  readonly metadata: Schema.JsonObject
  readonly createdAt: Date
  readonly expiresAt: Date
}

export type BuildError = OutOfScope | ServiceUnavailable | UpstreamUnavailable | UpstreamTimeout

export class OperationBuilder extends Context.Service<OperationBuilder, {
  /** Builds, stores and answers one operation. Declines (422 `account_frozen`) a frozen account's non-risk-reducing build. */
  build(request: BuildRequest): Effect.Effect<BuiltOperation, BuildError>
  /** Builds of the signer's accounts for (chain, sender, nonce), newest first. */
  matching(signer: string, chainId: number, sender: string, nonce: string): Effect.Effect<ReadonlyArray<StoredBuild>>
  findById(buildId: string): Effect.Effect<StoredBuild | undefined>
}>()("das/builds/OperationBuilder") {
  static readonly layer = Layer.effect(OperationBuilder, Effect.suspend(() => make))
}

/** Which operations the paymaster pays for: everything (default), or only risk-reducing ones. */
export const SponsorPolicy = Config.Literals(["all", "risk_reducing"], "SPONSOR_POLICY").pipe(Config.withDefault("all"))
/** How long a build (and its paymaster sponsorship) stays valid. */
export const BuildTtl = Config.Duration("BUILD_TTL").pipe(Config.withDefault(Duration.minutes(10)))

/**
 * Gas used when estimation predicts a revert: the build is still answered (with
 * `willSucceed: false`), so a client that insists can sign and relay it and get the
 * on-chain evidence of the revert.
 */
const FALLBACK_GAS = {
  callGasLimit: 300_000n,
  verificationGasLimit: 500_000n,
  preVerificationGas: 100_000n,
  paymasterVerificationGasLimit: 100_000n,
  paymasterPostOpGasLimit: 0n
} as const

const BuildRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  signer_address: Schema.String,
  intent_type: Schema.String,
  chain_id: Schema.Number,
  entry_point: Schema.String,
  sender: Schema.String,
  nonce: Schema.String,
  call_data: Schema.String,
  user_op: UserOperation,
  user_op_hash: Schema.String,
  risk_reducing: Schema.Boolean,
  sponsored: Schema.Boolean,
  human_summary: Schema.NullOr(Schema.String),
  metadata: Schema.JsonObject,
  created_at: Schema.Date,
  expires_at: Schema.Date
})

const toStored = (r: typeof BuildRow.Type): StoredBuild => ({
  id: r.id,
  accountId: r.account_id,
  signerAddress: r.signer_address,
  intentType: r.intent_type as IntentType,
  chainId: r.chain_id,
  entryPoint: r.entry_point,
  sender: r.sender,
  nonce: r.nonce,
  callData: r.call_data,
  userOp: r.user_op,
  userOpHash: r.user_op_hash,
  riskReducing: r.risk_reducing,
  sponsored: r.sponsored,
  humanSummary: r.human_summary,
  metadata: r.metadata,
  createdAt: r.created_at,
  expiresAt: r.expires_at
})

const ETH_DECIMALS = 18

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const chain = yield* Chain
  const bundler = yield* Bundler
  const stack = yield* AccountStack
  const paymaster = yield* Paymaster
  const network = yield* Network
  const sponsorPolicy = yield* SponsorPolicy
  const ttl = yield* BuildTtl

  const findMatching = SqlSchema.findAll({
    Request: Schema.Struct({ signer: Schema.String, chainId: Schema.Number, sender: Schema.String, nonce: Schema.String }),
    Result: BuildRow,
    execute: (r) =>
      sql`SELECT b.* FROM op_builds b JOIN accounts a ON a.id = b.account_id
          WHERE a.signer_address = ${r.signer} AND b.chain_id = ${r.chainId}
            AND b.sender = ${r.sender} AND b.nonce = ${r.nonce}
          ORDER BY b.created_at DESC, b.id DESC
          LIMIT 50`
  })
  const findOne = SqlSchema.findAll({
    Request: Schema.String,
    Result: BuildRow,
    execute: (id) => sql`SELECT * FROM op_builds WHERE id = ${id}`
  })

  const isFrozen = (accountId: string) =>
    sql<{ frozen: boolean }>`SELECT frozen FROM accounts WHERE id = ${accountId}`.pipe(
      Effect.map((rows) => rows[0]?.frozen === true),
      Effect.orDie
    )

  /** Estimation; a rejection (predicted revert, ...) is a verdict, not an error. */
  const estimate = (op: Parameters<Bundler["Service"]["estimateUserOperationGas"]>[0]) =>
    bundler.estimateUserOperationGas(op).pipe(
      Effect.map((gas): { gas: GasEstimate; rejected?: BundlerRejected } => ({ gas })),
      Effect.catchTag("BundlerRejected", (rejected) => Effect.succeed({ gas: FALLBACK_GAS, rejected })),
      mapUpstream
    )

  const build = Effect.fn("OperationBuilder.build")(function*(request: BuildRequest) {
    const { account, intentType } = request
    const riskReducing = request.riskReducing ?? isRiskReducingIntent(intentType)
    if (!allowedWhileFrozen(intentType, riskReducing) && (yield* isFrozen(account.id))) {
      return yield* new OutOfScope({
        message: "The account is frozen: only risk-reducing operations (and unfreezing) can be built",
        declineReason: ACCOUNT_FROZEN
      })
    }
    const sponsored = paymaster.address !== undefined && (sponsorPolicy === "all" || riskReducing)
    if (riskReducing && !sponsored) {
      return yield* new ServiceUnavailable({
        message: "Risk-reducing operations are sponsored, and no sponsoring paymaster is configured"
      })
    }
    if ((request.calls === undefined) === (request.callData === undefined)) {
      return yield* Effect.die(new Error("OperationBuilder.build: give exactly one of calls / callData"))
    }
    const callData = request.callData ?? stack.encodeExecute(request.calls ?? [])

    const sender = account.address as Address
    const counterfactual = yield* stack.counterfactualAccount(account.signerAddress as Address, BigInt(account.index)).pipe(
      Effect.orDie
    )
    if (counterfactual.address.toLowerCase() !== sender.toLowerCase()) {
      return yield* Effect.die(new Error(`account ${account.id}: stored address is not the account stack's`))
    }
    const [deployed, nonce, fees] = yield* mapUpstream(
      Effect.all([chain.isDeployed(sender), chain.entryPointNonce(sender, 0n), chain.feeData], { concurrency: "unbounded" })
    )

    const base = {
      sender,
      nonce,
      ...(deployed ? {} : { factory: counterfactual.factory, factoryData: counterfactual.factoryData }),
      callData,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      signature: stack.stubSignature
    }
    const stub = sponsored
      ? yield* paymaster.stub.pipe(Effect.mapError((e) => new ServiceUnavailable({ message: e.message })))
      : undefined
    const { gas, rejected } = yield* estimate({ ...base, ...(stub ?? {}) })
    const gasFields = {
      callGasLimit: gas.callGasLimit,
      verificationGasLimit: gas.verificationGasLimit,
      preVerificationGas: gas.preVerificationGas
    }
    const validForSeconds = Math.max(60, Math.floor(Duration.toSeconds(ttl)))
    const paymasterFields = stub === undefined ? {} : yield* paymaster.sponsor(
      {
        ...base,
        ...gasFields,
        paymasterVerificationGasLimit: gas.paymasterVerificationGasLimit ?? stub.paymasterVerificationGasLimit,
        paymasterPostOpGasLimit: gas.paymasterPostOpGasLimit ?? stub.paymasterPostOpGasLimit
      },
      validForSeconds
    ).pipe(Effect.orDie)
    const userOp: UserOperationV07 = { ...base, ...gasFields, ...paymasterFields, signature: "0x" }
    const userOpHash = userOpHashOf(userOp, network.chainId, network.entryPoint)
    const typedData = typedDataJson(stack.userOperationTypedData(userOp))
    const wire = toWire(userOp, network.chainId, network.entryPoint)

    const now = new Date()
    const expiresAt = new Date(now.getTime() + validForSeconds * 1000)
    const totalGas = gasFields.callGasLimit + gasFields.verificationGasLimit + gasFields.preVerificationGas +
      (userOp.paymasterVerificationGasLimit ?? 0n) + (userOp.paymasterPostOpGasLimit ?? 0n)
    const maxCost = totalGas * fees.maxFeePerGas
    const warnings = [...(request.simulation?.warnings ?? [])]
    if (rejected !== undefined) {
      warnings.push(`Estimation predicts this operation fails: ${rejected.revertReason ?? rejected.message}`)
    }
    if (!sponsored) {
      const balance = yield* mapUpstream(chain.nativeBalance(sender))
      if (balance < maxCost) {
        warnings.push(`The account holds ${formatUnits(balance, ETH_DECIMALS)} ETH; gas may cost up to ${formatUnits(maxCost, ETH_DECIMALS)} ETH`)
      }
    }
    const buildId = `bld_${crypto.randomUUID()}`
    const simulation: Simulation = {
      id: `sim_${crypto.randomUUID()}`,
      intentType,
      willSucceed: rejected === undefined,
      ...(rejected !== undefined ? { declineReason: rejected.reason } : {}),
      ...(request.simulation?.amountIn !== undefined ? { amountIn: request.simulation.amountIn } : {}),
      ...(request.simulation?.amountOut !== undefined ? { amountOut: request.simulation.amountOut } : {}),
      ...(request.simulation?.rate !== undefined ? { rate: request.simulation.rate } : {}),
      ...(request.simulation?.route !== undefined ? { route: request.simulation.route } : {}),
      ...(request.simulation?.slippageBps !== undefined ? { slippageBps: request.simulation.slippageBps } : {}),
      fees: [...(request.simulation?.fees ?? [])],
      gas: {
        method: sponsored ? "sponsored" : "native",
        cost: {
          token: { symbol: "ETH", chainId: network.chainId },
          amount: Number(formatUnits(maxCost, ETH_DECIMALS))
        },
        sponsored
      },
      warnings,
      expiresAt: expiresAt.toISOString()
    }
    const answer: UserOpBuild = {
      intentType,
      userOp: wire,
      userOpHash,
      humanSummary: request.humanSummary,
      simulation,
      riskReducing,
      // There are no time-locked operations: everything executes as soon as it is relayed and included.
      instant: true,
      gasless: sponsored,
      // No token paymaster on this network yet: gas in stablecoins is not offered (docs/relay.md).
      gasPermit: null,
      usdtApproval: null,
      buildId,
      typedData,
      expiresAt: expiresAt.toISOString()
    }

    yield* sql`
      INSERT INTO op_builds (id, account_id, signer_address, intent_type, chain_id, entry_point, sender, nonce, call_data,
                             user_op, user_op_hash, risk_reducing, sponsored, human_summary, metadata, created_at, expires_at)
      VALUES (${buildId}, ${account.id}, ${account.signerAddress}, ${intentType}, ${network.chainId},
              ${network.entryPoint.toLowerCase()}, ${wire.sender}, ${wire.nonce}, ${wire.callData},
              ${JSON.stringify(wire)}::jsonb, ${userOpHash}, ${riskReducing}, ${sponsored}, ${request.humanSummary},
              ${JSON.stringify(request.metadata ?? {})}::jsonb, ${now}, ${expiresAt})`.pipe(Effect.orDie)

    return { buildId, build: answer, userOp } satisfies BuiltOperation
  })

  const matching = Effect.fn("OperationBuilder.matching")(function*(signer: string, chainId: number, sender: string, nonce: string) {
    const rows = yield* findMatching({ signer, chainId, sender: sender.toLowerCase(), nonce }).pipe(Effect.orDie)
    return rows.map(toStored)
  })

  const findById = Effect.fn("OperationBuilder.findById")(function*(buildId: string) {
    const rows = yield* findOne(buildId).pipe(Effect.orDie)
    return rows[0] === undefined ? undefined : toStored(rows[0])
  })

  return OperationBuilder.of({ build, matching, findById })
})
