/**
 * The one operation builder. Every build endpoint (account rules, delegations,
 * marketplace, ...) gives it an account, an intent, the calls (or raw call data) and a
 * summary; it answers the contract's `UserOpBuild`: nonce from the EntryPoint,
 * factory data while the account is counterfactual, gas from the bundler's estimation
 * (stub signature + paymaster stub), fees from the chain, sponsorship by the paymaster,
 * the viem `userOpHash`, the EIP-712 typed data the owner signs, and a simulation. On
 * request (`gasToken`) gas is paid in a stablecoin through the token paymaster instead:
 * `USDC` by permit (`gasPermit`, two signatures), `USDT` by allowance (`usdtApproval`: without
 * an unlimited allowance, an unlimited approve batched into the call data, that operation sponsored).
 * The build is stored before it is answered: the relay only accepts operations that
 * match a stored build (docs/relay.md).
 */
import { Config, Context, Data, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { type Address, formatUnits, type Hex, maxUint256 } from "viem"
import type { Account } from "../accounts/Domain.ts"
import { OutOfScope, ServiceUnavailable, type TooManyRequests, type UpstreamTimeout, type UpstreamUnavailable } from "../api/Errors.ts"
import type { Call } from "../chain/Accounts4337.ts"
import type { Bundler, BundlerRejected, GasEstimate, UserOperationV07 } from "../chain/Bundler.ts"
import { Chains } from "../chain/Chains.ts"
import { allowanceEstimationData, approvalCalls, permitEstimationData, TOKEN_PAYMASTER_GAS } from "../chain/TokenPaymaster.ts"
import { type IntentType, type Simulation, type TokenAmount, UserOpBuild } from "../domain/Operations.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import { makeBuildRepo, type StoredBuild } from "./BuildRepo.ts"
import { allowanceSetup, matchesBuild, permitMismatch } from "./GasPayment.ts"
import { ACCOUNT_FROZEN, allowedWhileFrozen, isRiskReducingIntent } from "./Intents.ts"
import { currentPeerKey } from "../platform/ClientAddress.ts"
import { chargeSponsorship, type SponsorLimits, sponsoredFees, sponsorLimitsOf } from "./Sponsorship.ts"
import { ACCOUNT_IMPLEMENTATION_VERSION, type GasToken, makeTokenGas } from "./TokenGas.ts"
import { mapUpstream, toWire, typedDataJson, userOpHashOf } from "./Wire.ts"

export type { Call }
export { matchesBuild, permitMismatch }

export interface BuildRequest<E = never> {
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
  /**
   * Pay gas in a stablecoin through the token paymaster (needs `calls`). Ignored, with a
   * warning, for risk-reducing operations: those are always sponsored.
   */
  readonly gasToken?: GasToken
  /**
   * What an identical build (same userOpHash, account and intent) must also have in common
   * to be answered again instead of stored anew while it is open. Default: the metadata.
   * Delegated actions share across reservations (the one build keeps the first one's).
   */
  readonly shareKey?: string
  /**
   * The signature estimation runs with (default: the account stack's EOA stub). A passkey
   * verifies far more expensively: a build a passkey will sign estimates with its stub.
   */
  readonly stubSignature?: Hex
  /**
   * Writes of the building feature that must commit with the build (and only when it is stored
   * anew, not when an identical open one is answered): run in the build's own transaction. Its
   * failure rolls the build back (nothing stored, nothing counted) and is the build's failure.
   */
  readonly onStored?: (stored: { readonly buildId: string; readonly userOpHash: string }) => Effect.Effect<void, E>
  /**
   * Sent after `queuedBehind` other operations of this account built alongside it (a request of
   * several grants, relayed one after the other): its nonce is that many past the account's
   * current one, and only the first carries the account's deployment. Estimated as the first
   * would be (an over-estimate of verification gas when the first deploys; only gas used is paid).
   */
  readonly queuedBehind?: number
}

export interface BuiltOperation {
  readonly buildId: string
  /** The contract's response (with `buildId`, `typedData` and `expiresAt` added). */
  readonly build: UserOpBuild
  /** The same operation as viem sees it (bigints), unsigned. */
  readonly userOp: UserOperationV07
  /** The stored build's metadata: another request's when an identical open build was answered again. */
  readonly metadata: Schema.JsonObject
  /** Whether an identical open build was answered again (nothing new stored). */
  readonly shared: boolean
}

export type { GasToken, StoredBuild }
export { ACCOUNT_IMPLEMENTATION_VERSION }

export type BuildError = OutOfScope | ServiceUnavailable | TooManyRequests | UpstreamUnavailable | UpstreamTimeout

export class OperationBuilder extends Context.Service<OperationBuilder, {
  /** Builds, stores and answers one operation. Declines (422 `account_frozen`) a frozen account's non-risk-reducing build. */
  build<E = never>(request: BuildRequest<E>): Effect.Effect<BuiltOperation, BuildError | E>
  /**
   * Builds of the signer's accounts whose userOpHash is `userOpHash` (every signed field
   * equal), unexpired first, then newest first. Indexed by hash: no other user's builds
   * can crowd it. Each carries its account's frozen flag as read by the same statement.
   */
  byHash(signer: string, chainId: number, userOpHash: string): Effect.Effect<ReadonlyArray<StoredBuild>>
  /**
   * `byHash` for the signer of a live session (`tokenHash`: the bearer token's hash), the
   * session check in the same statement; undefined when no live session has that token.
   * `alongside`: a caller's scalar subquery read by that statement too (answered as `alongside`).
   */
  byHashForSession(tokenHash: Uint8Array, chainId: number, userOpHash: string, alongside?: Statement.Fragment): Effect.Effect<
    { readonly signer: string; readonly alongside: unknown; readonly builds: ReadonlyArray<StoredBuild> } | undefined
  >
  /** Whether the signer's accounts have any build for (chain, sender, nonce): only to word a refusal. */
  hasBuildFor(signer: string, chainId: number, sender: string, nonce: string): Effect.Effect<boolean>
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

const ETH_DECIMALS = 18

/** A feature's `onStored` failed: its error, carried out of the (rolled back) transaction. */
class OnStoredFailed extends Data.TaggedError("OnStoredFailed")<{ readonly cause: unknown }> {}


const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const chains = yield* Chains
  const sponsorPolicy = yield* SponsorPolicy
  const ttl = yield* BuildTtl
  // Each chain's sponsorship limits (its paymaster's budget and fee ceilings).
  const sponsorLimits = new Map<number, SponsorLimits>()
  for (const c of chains.all) sponsorLimits.set(c.chainId, yield* sponsorLimitsOf(c.chainId))
  const repo = makeBuildRepo(sql, (chainId) => chains.find(chainId)?.network.tokenPaymaster?.address.toLowerCase())
  // Each chain's own token-gas helpers (its token paymaster and stablecoins).
  const tokenGasOf = new Map(chains.all.map((c) => [c.chainId, makeTokenGas({ chain: c.chain, stack: c.accounts, network: c.network })]))

  /** Estimation; a rejection (predicted revert, ...) is a verdict, not an error. */
  const estimate = (bundler: Bundler["Service"], op: Parameters<Bundler["Service"]["estimateUserOperationGas"]>[0]) =>
    bundler.estimateUserOperationGas(op).pipe(
      Effect.map((gas): { gas: GasEstimate; rejected?: BundlerRejected } => ({ gas })),
      Effect.catchTag("BundlerRejected", (rejected) => Effect.succeed({ gas: FALLBACK_GAS, rejected })),
      mapUpstream
    )

  const build = Effect.fn("OperationBuilder.build")(function*(request: BuildRequest<unknown>) {
    const { account, intentType } = request
    // The account's own chain: its reader, bundler, account stack and paymaster.
    const net = yield* chains.serving(account.chainId)
    const { chain, bundler, accounts: stack, paymaster, network } = net
    const { payInToken, tokenGasChoice } = tokenGasOf.get(net.chainId)!
    const riskReducing = request.riskReducing ?? isRiskReducingIntent(intentType)
    if (!allowedWhileFrozen(intentType, riskReducing) && (yield* repo.isFrozen(account.id))) {
      return yield* new OutOfScope({
        message: "The account is frozen: only risk-reducing operations (and unfreezing) can be built",
        declineReason: ACCOUNT_FROZEN
      })
    }
    const warnings = [...(request.simulation?.warnings ?? [])]
    if (riskReducing && request.gasToken !== undefined) {
      warnings.push(`Risk-reducing operations are always sponsored: gas is not paid in ${request.gasToken}`)
    }
    const gasToken = riskReducing ? undefined : request.gasToken
    const tokenGasAsked = gasToken === undefined ? undefined : yield* tokenGasChoice(gasToken)
    // Gas by allowance needs the allowance before the operation (the paymaster pre-charges in validation):
    // without it, this operation grants it, sponsored (GasPayment.allowanceSetup).
    const setup = tokenGasAsked?.mode !== "allowance" ? undefined : allowanceSetup(
      tokenGasAsked.token.address,
      tokenGasAsked.paymaster,
      ...yield* mapUpstream(Effect.all([
        chain.erc20Allowance(tokenGasAsked.token.address, account.address as Address, tokenGasAsked.paymaster),
        chain.erc20Balance(tokenGasAsked.token.address, account.address as Address)
      ], { concurrency: "unbounded" }))
    )
    if (setup !== undefined && paymaster.address === undefined) {
      return yield* new ServiceUnavailable({
        message: `${gasToken} gas needs an allowance to the token paymaster first, and no sponsoring paymaster is configured to set it`
      })
    }
    const tokenGas = setup === undefined ? tokenGasAsked : undefined
    if (tokenGasAsked !== undefined && request.calls === undefined) {
      return yield* Effect.die(new Error("OperationBuilder.build: gasToken needs calls (the approval may be batched with them)"))
    }
    const sponsored = tokenGas === undefined && paymaster.address !== undefined &&
      (sponsorPolicy === "all" || riskReducing || setup !== undefined)
    if (riskReducing && !sponsored) {
      return yield* new ServiceUnavailable({
        message: "Risk-reducing operations are sponsored, and no sponsoring paymaster is configured"
      })
    }
    if ((request.calls === undefined) === (request.callData === undefined)) {
      return yield* Effect.die(new Error("OperationBuilder.build: give exactly one of calls / callData"))
    }
    const calls = [...(setup?.calls ?? []), ...(request.calls ?? [])]
    const callData = request.callData ?? stack.encodeExecute(calls)

    const sender = account.address as Address
    const [deployed, nonce, suggestedFees, tokenAllowance] = yield* mapUpstream(
      Effect.all([
        chain.isDeployed(sender),
        chain.entryPointNonce(sender, 0n),
        chain.feeData,
        tokenGas === undefined ? Effect.succeed(0n) : chain.erc20Allowance(tokenGas.token.address, sender, tokenGas.paymaster)
      ], { concurrency: "unbounded" })
    )
    // The factory data while counterfactual. A deployed account may have changed hands since (its owner
    // key replaced on chain, the account handed to the new key's sign-in): it no longer derives from them.
    const counterfactual = deployed ? undefined : yield* stack.counterfactualAccount(account.signerAddress as Address, BigInt(account.index)).pipe(
      Effect.orDie
    )
    if (counterfactual !== undefined && counterfactual.address.toLowerCase() !== sender.toLowerCase()) {
      return yield* Effect.die(new Error(`account ${account.id}: stored address is not the account stack's`))
    }

    // Sponsored fees are capped (the paymaster's signature binds them): no runaway price on the paymaster's deposit.
    const limits = sponsorLimits.get(net.chainId)!
    const fees = sponsored ? yield* sponsoredFees(suggestedFees, limits) : suggestedFees
    const base = {
      sender,
      nonce,
      ...(counterfactual === undefined ? {} : { factory: counterfactual.factory, factoryData: counterfactual.factoryData }),
      callData,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      signature: request.stubSignature ?? stack.stubSignature
    }
    // What is signed and sent: `base` itself, or (queued behind others) its nonce moved past theirs, without the deployment.
    const queued = BigInt(Math.max(0, request.queuedBehind ?? 0))
    const sent = queued === 0n ? base : (() => {
      const { factory: _f, factoryData: _d, ...rest } = base as typeof base & { factory?: Address; factoryData?: Hex }
      return { ...rest, nonce: nonce + queued }
    })()
    const stub = sponsored
      ? yield* paymaster.stub.pipe(Effect.mapError((e) => new ServiceUnavailable({ message: e.message })))
      : undefined
    // Token gas is estimated as if the allowance were there (an approve batched before the calls, its amount
    // 0xff..fe: an upper bound on size, and not the max the token would skip updating) against the token
    // paymaster in allowance mode: its
    // validation checks the balance, its postOp charges. Slight over-estimates only.
    const estimationOverrides = tokenGas === undefined ? {} : {
      callData: stack.encodeExecute([
        ...approvalCalls(tokenGas.token.address, tokenGas.paymaster, maxUint256 - 1n, tokenAllowance),
        ...calls
      ]),
      paymaster: tokenGas.paymaster,
      paymasterVerificationGasLimit: TOKEN_PAYMASTER_GAS.verificationFloor + TOKEN_PAYMASTER_GAS.permitExtra,
      paymasterPostOpGasLimit: TOKEN_PAYMASTER_GAS.postOp,
      paymasterData: tokenGas.mode === "permit"
        ? permitEstimationData(tokenGas.token.address)
        : allowanceEstimationData(tokenGas.token.address)
    }
    const { gas, rejected } = yield* estimate(bundler, { ...base, ...(stub ?? {}), ...estimationOverrides })
    // Estimates are tight: a call that forwards gas (redeemDelegations → the account →
    // the token) can run short by the 63/64 rule or by state that moved between estimate
    // and inclusion. A margin costs nothing unused (only gas used is charged).
    const gasFields = {
      callGasLimit: gas.callGasLimit * 13n / 10n + 20_000n,
      verificationGasLimit: gas.verificationGasLimit * 11n / 10n,
      preVerificationGas: gas.preVerificationGas
    }
    // The paymaster's validation too: once, under load, Alto's bundle simulation found an enable
    // over its estimate of 21,219 gas ("AA36 over paymasterVerificationGasLimit") and dropped it
    // without a word to the relay. Verification gas is not charged when unused.
    const sponsorGas = stub === undefined ? undefined : {
      paymasterVerificationGasLimit: gas.paymasterVerificationGasLimit === undefined
        ? stub.paymasterVerificationGasLimit
        : gas.paymasterVerificationGasLimit * 12n / 10n + 10_000n,
      paymasterPostOpGasLimit: gas.paymasterPostOpGasLimit ?? stub.paymasterPostOpGasLimit
    }
    const validForSeconds = Math.max(60, Math.floor(Duration.toSeconds(ttl)))
    // Counted with the paymaster's signature (the signed operation may go to any bundler), in the
    // transaction that stores the build: the signature leaves the service only if both commit.
    // Risk-reducing ones pass the quotas and may use the budget's reserve, but are counted (Sponsorship.ts).
    const charge = sponsorGas === undefined ? undefined : chargeSponsorship(limits, {
      chainId: net.chainId,
      signer: account.signerAddress,
      clientAddress: yield* currentPeerKey,
      gas: gasFields.callGasLimit + gasFields.verificationGasLimit + gasFields.preVerificationGas +
        sponsorGas.paymasterVerificationGasLimit + sponsorGas.paymasterPostOpGasLimit,
      riskReducing
    }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
    const sponsoredFields = sponsorGas === undefined ? {} : yield* paymaster.sponsor(
      {
        ...sent,
        ...gasFields,
        ...sponsorGas
      },
      validForSeconds
    ).pipe(Effect.orDie)
    const token = tokenGas === undefined ? undefined : yield* payInToken({
      tokenGas,
      sender,
      calls,
      allowance: tokenAllowance,
      estimated: gas,
      totalGasBeforePaymaster: gasFields.callGasLimit + gasFields.verificationGasLimit + gasFields.preVerificationGas,
      maxFeePerGas: fees.maxFeePerGas,
      deadline: BigInt(Math.floor(Date.now() / 1000) + validForSeconds)
    })
    const userOp: UserOperationV07 = {
      ...sent,
      ...(token?.callData !== undefined ? { callData: token.callData } : {}),
      ...gasFields,
      ...sponsoredFields,
      ...(token?.paymasterFields ?? {}),
      signature: "0x"
    }
    const userOpHash = userOpHashOf(userOp, network.chainId, network.entryPoint)
    const typedData = typedDataJson(stack.userOperationTypedData(userOp))
    const wire = toWire(userOp, network.chainId, network.entryPoint)

    const now = new Date()
    const expiresAt = new Date(now.getTime() + validForSeconds * 1000)
    const totalGas = gasFields.callGasLimit + gasFields.verificationGasLimit + gasFields.preVerificationGas +
      (userOp.paymasterVerificationGasLimit ?? 0n) + (userOp.paymasterPostOpGasLimit ?? 0n)
    const maxCost = totalGas * fees.maxFeePerGas
    if (rejected !== undefined) {
      warnings.push(`Estimation predicts this operation fails: ${rejected.revertReason ?? rejected.message}`)
    }
    // Estimation ran with a lower paymaster limit than the final one: re-check the balance against the final maximum.
    const tokenShort = token !== undefined && rejected === undefined && token.balance < token.maxTokenCost
    if (token !== undefined && token.balance < token.maxTokenCost) {
      warnings.push(
        `The account holds ${formatUnits(token.balance, token.info.decimals)} ${token.info.symbol}; ` +
          `gas may cost up to ${formatUnits(token.maxTokenCost, token.info.decimals)} ${token.info.symbol}`
      )
    }
    if (!sponsored && token === undefined) {
      const balance = yield* mapUpstream(chain.nativeBalance(sender))
      if (balance < maxCost) {
        warnings.push(`The account holds ${formatUnits(balance, ETH_DECIMALS)} ETH; gas may cost up to ${formatUnits(maxCost, ETH_DECIMALS)} ETH`)
      }
    }
    const buildId = `bld_${crypto.randomUUID()}`
    const simulation: Simulation = {
      id: `sim_${crypto.randomUUID()}`,
      intentType,
      willSucceed: rejected === undefined && !tokenShort,
      ...(rejected !== undefined
        ? { declineReason: rejected.reason }
        : tokenShort
        ? { declineReason: "insufficient_token_balance" }
        : {}),
      ...(request.simulation?.amountIn !== undefined ? { amountIn: request.simulation.amountIn } : {}),
      ...(request.simulation?.amountOut !== undefined ? { amountOut: request.simulation.amountOut } : {}),
      ...(request.simulation?.rate !== undefined ? { rate: request.simulation.rate } : {}),
      ...(request.simulation?.route !== undefined ? { route: request.simulation.route } : {}),
      ...(request.simulation?.slippageBps !== undefined ? { slippageBps: request.simulation.slippageBps } : {}),
      fees: [...(request.simulation?.fees ?? [])],
      gas: token !== undefined
        ? {
          method: token.method,
          cost: {
            token: { symbol: token.info.symbol, chainId: network.chainId, address: token.info.address },
            amount: Number(formatUnits(token.maxTokenCost, token.info.decimals))
          },
          sponsored: false
        }
        : {
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
      // With a permit, userOpHash and typedData cover the prefix only: stale until the permit signature is attached.
      gasPermit: token?.gasPermit ?? null,
      usdtApproval: token?.usdtApproval ?? setup?.usdtApproval ?? null,
      buildId,
      typedData,
      expiresAt: expiresAt.toISOString()
    }

    const metadata = request.metadata ?? {}
    const storing = repo.storeOrShare({
      id: buildId,
      accountId: account.id,
      signerAddress: account.signerAddress,
      intentType,
      chainId: network.chainId,
      entryPoint: network.entryPoint.toLowerCase(),
      userOp: wire,
      userOpHash,
      riskReducing,
      sponsored,
      humanSummary: request.humanSummary,
      metadata,
      createdAt: now,
      expiresAt,
      answer,
      shareKey: request.shareKey ?? JSON.stringify(metadata)
    })
    // One transaction, one commit: the build, the feature's own writes, the sponsorship's counters.
    // Counted last (its rows are every build's: held only until the commit), and only for a build
    // stored anew: an identical open build answered again was counted when it was stored.
    // Run again whole when it lost a lock conflict (a deadlock): it locks the grant of an action's
    // build and the shared sponsorship counters, which other transactions take too.
    const stored = yield* transactionRetryingConflicts(sql)(Effect.gen(function*() {
      const open = yield* storing
      if (open !== undefined) return open
      if (request.onStored !== undefined) {
        yield* request.onStored({ buildId, userOpHash }).pipe(Effect.mapError((cause) => new OnStoredFailed({ cause })))
      }
      if (charge !== undefined) yield* charge
      return undefined
    })).pipe(
      Effect.catchTag("SqlError", Effect.die),
      // Rolled back by then: the feature's own failure is the build's.
      Effect.catchTag("OnStoredFailed", (failed) => Effect.fail(failed.cause))
    )
    if (stored !== undefined) {
      const previous = yield* Schema.decodeUnknownEffect(UserOpBuild)(stored.answer).pipe(Effect.orDie)
      return { buildId: stored.id, build: previous, userOp, metadata: stored.metadata, shared: true } satisfies BuiltOperation
    }
    return { buildId, build: answer, userOp, metadata, shared: false } satisfies BuiltOperation
  })

  const byHash = Effect.fn("OperationBuilder.byHash")(function*(signer: string, chainId: number, userOpHash: string) {
    return yield* repo.byHash(signer, chainId, userOpHash.toLowerCase())
  })
  const byHashForSession = Effect.fn("OperationBuilder.byHashForSession")(function*(
    tokenHash: Uint8Array,
    chainId: number,
    userOpHash: string,
    alongside?: Statement.Fragment
  ) {
    return yield* repo.byHashForSession(tokenHash, chainId, userOpHash.toLowerCase(), alongside)
  })
  const hasBuildFor = Effect.fn("OperationBuilder.hasBuildFor")(function*(signer: string, chainId: number, sender: string, nonce: string) {
    return yield* repo.hasBuildFor(signer, chainId, sender.toLowerCase(), nonce)
  })
  const findById = Effect.fn("OperationBuilder.findById")(function*(buildId: string) {
    return yield* repo.findById(buildId)
  })

  return OperationBuilder.of({
    // Effect.fn erases the type parameter: the only failure beyond BuildError is onStored's own.
    build: build as <E>(request: BuildRequest<E>) => Effect.Effect<BuiltOperation, BuildError | E>,
    byHash,
    byHashForSession,
    hasBuildFor,
    findById
  })
})
