/**
 * Build and enable: the build (policy, the grant's one leg, the enable operation, the
 * typed data the owner signs), and the create (check the owner's signatures, record the
 * pending delegation, relay the signed enable, activate only when it executed, answer
 * within a bounded wait). `settleEnable` is the relay's on-executed hook (Actions.ts
 * registers it). Rules: docs/delegations.md. SQL: DelegationRepo.ts.
 */
import { Config, Duration, Effect } from "effect"
import type { Address, Hex } from "viem"
import { Accounts } from "../accounts/Accounts.ts"
import { BadRequest, Conflict, UpstreamTimeout } from "../api/Errors.ts"
import { OperationBuilder } from "../builds/OperationBuilder.ts"
import type { Call } from "../chain/Accounts4337.ts"
import { fromWire, upstreamError, userOpHashOf } from "../builds/Wire.ts"
import type { UserOpReceipt as BundlerReceipt, UserOpLog } from "../chain/Bundler.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { networkTokens } from "../chain/Network.ts"
import type { UserOperation, UserOpReceipt } from "../domain/Operations.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { enableCalls, enabledPermissionIds, legTypedData, randomSalt, recoverLegSigner } from "./Caveats.ts"
import { type Carried, DelegationRepo, type Leg } from "./DelegationRepo.ts"
import type { DelegationBuild, GrantMandate, PolicySet, RevocationMethods } from "./Domain.ts"
import { grantTermsOf, makeGrant, makeRevocationGrant, revocationTermsOf } from "./Grant.ts"
import { isNativeSymbol, nativeToken } from "../tokens/Native.ts"
import { type PeriodInput, startOnChain } from "./Periods.ts"
import { decodeSignedTerms } from "./SignedTerms.ts"
import { humanSummary } from "./Summary.ts"
import { fromUnits, makePolicySet, makeRevocationPolicy, toUnits } from "./Policy.ts"
import { makeAgentControl } from "./AgentControl.ts"
import { type ApprovalRuleInput, approverProblem } from "./ApprovalRule.ts"
import { delegateProblem, type RedeemersInput } from "./Redeemers.ts"
import type { StreamInput } from "./Streams.ts"
import { Relay } from "./Ports.ts"
import { lower, type Reads, type Signer } from "./Reads.ts"
import { type BasketRequest, expandBasket } from "./Baskets.ts"

interface EnableOutcome {
  readonly status: "executed"
  readonly transactionHash: string
  readonly logs: ReadonlyArray<UserOpLog>
}

export interface BuildInput {
  readonly name: string
  readonly kind: string
  readonly delegateeAddress: string
  readonly chainId: number
  readonly budgets: ReadonlyArray<{
    readonly token: { readonly symbol: string }
    readonly amount: number
    readonly period?: PeriodInput
    readonly stream?: StreamInput
  }>
  readonly perActionMax?: { readonly token: { readonly symbol: string }; readonly amount: number }
  readonly maxActions?: number
  readonly recipientAllowlist?: ReadonlyArray<{ readonly name: string; readonly address: string; readonly chainId: number }>
  readonly allowedActions?: ReadonlyArray<{ readonly name: string; readonly target: string; readonly selectors: ReadonlyArray<string> }>
  readonly expiresAt?: string
  /** Redeemable only from this whole second (TimestampEnforcer's lower bound): an AP2 mandate's execution window. */
  readonly notBefore?: string
  readonly accountId?: string
  readonly redeemers?: RedeemersInput
  readonly approval?: ApprovalRuleInput
  /** A basket budget (Baskets.ts); with `tokens` and no `budgets`, the grant's only budget. */
  readonly basket?: BasketRequest
  /** A revocation-only grant (ERC-7715 revocation types; `budgets` empty): the primitives it may call. */
  readonly revocation?: RevocationMethods
  /**
   * The mandate the grant is built from (an AP2 open Payment Mandate, src/ap2/): kept on the build
   * and the grant; `note` (the service's own words: which constraint became which limit) follows the
   * limits in the summary, before the requester's words.
   */
  readonly mandate?: { readonly ref: GrantMandate; readonly note: string }
}

/**
 * A grant that replaces another (asking for more, docs/approvals.md): the same operation first
 * runs `leading` (disable the old grant, check its spend is still `carried`: Replace.ts), and
 * the new grant's on-chain budgets and action count are its totals less what was carried.
 */
export interface Replacement {
  readonly delegationId: string
  readonly carried: Carried
  readonly leading: ReadonlyArray<Call>
  readonly summary: string
}

export interface CreateInput {
  readonly userOp: UserOperation
  readonly userOpHash: string
  readonly intentType: string
  readonly delegationSignatures?: ReadonlyArray<{ readonly permissionId: string; readonly signature: string }>
}

/** How long `POST /delegations` waits for the enable to settle before answering 504. */
export const EnableWait = Config.Duration("DELEGATION_ENABLE_WAIT").pipe(Config.withDefault(Duration.seconds(30)))
/** The shortest delegation lifetime a build accepts (an already-expiring grant is usually a mistake). */
export const MinLifetime = Config.Duration("DELEGATION_MIN_LIFETIME").pipe(Config.withDefault(Duration.minutes(1)))

export const makeEnable = (reads: Reads) => Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const accounts = yield* Accounts
  const tokens = yield* TokenRegistry
  const builder = yield* OperationBuilder
  const chains = yield* Chains
  const relay = yield* Relay
  const enableWait = yield* EnableWait
  const minLifetimeMs = Duration.toMillis(yield* MinLifetime)
  const agentControl = yield* makeAgentControl
  const managerOf = (chainId: number) => chains.find(chainId)?.network.delegation.DelegationManager
  const { decimalsOf, render } = reads
  /** A chain's own contracts: none of them can be a grant's delegate. */
  const deploymentContracts = (network: ChainNetwork["network"]) => [
    { name: "DelegationManager", address: network.delegation.DelegationManager },
    { name: "EntryPoint", address: network.entryPoint },
    { name: "SimpleFactory", address: network.delegation.SimpleFactory },
    ...Object.entries(network.delegation.implementations).map(([name, address]) => ({ name, address })),
    ...Object.entries(network.delegation.caveatEnforcers).map(([name, address]) => ({ name, address })),
    ...networkTokens(network.tokens).map((t) => ({ name: `token ${t.symbol}`, address: t.address })),
    ...(network.paymaster === undefined ? [] : [{ name: "paymaster", address: network.paymaster.address }]),
    ...(network.tokenPaymaster === undefined ? [] : [{ name: "token paymaster", address: network.tokenPaymaster.address }])
  ]

  // ---------------------------------------------------------------------------------
  // Build

  const build = Effect.fn("Delegations.build")(function*(
    signer: Signer,
    input: BuildInput,
    replacement?: Replacement,
    /** Built alongside others of the same account, sent after them (OperationBuilder's `queuedBehind`). */
    queuedBehind?: number
  ) {
    // A basket naming its tokens is the grant's only budget: its budgets are derived from it (Baskets.ts).
    const expanded = expandBasket(input.budgets, input.basket)
    if (typeof expanded === "string") return yield* new BadRequest({ message: expanded, details: { field: "basket" } })
    if (expanded.budgets.length === 0 && input.revocation === undefined) {
      return yield* new BadRequest({ message: "a grant needs at least one budget (or a basket naming its tokens: basket.tokens)", details: { field: "budgets" } })
    }
    input = { ...input, budgets: expanded.budgets, ...(expanded.basket === undefined ? {} : { basket: expanded.basket }) }
    const net = yield* chains.get(input.chainId)
    const { network, accounts: stack } = net
    const dm = network.delegation.DelegationManager
    const account = yield* accounts.resolve(signer.address, { accountId: input.accountId, chainId: input.chainId })
    // The native coin is no token contract: its budget is held by the native enforcers (Native.ts).
    const budgetTokens = yield* Effect.forEach(input.budgets, (b) =>
      isNativeSymbol(b.token.symbol) ? Effect.succeed(nativeToken(input.chainId)) : tokens.resolve(input.chainId, b.token.symbol))
    const now = new Date()
    if (input.revocation !== undefined && input.budgets.length > 0) {
      return yield* new BadRequest({ message: "a revocation grant has no budget: it moves nothing", details: { field: "budgets" } })
    }
    const native = nativeToken(input.chainId)
    // A default start (a renewing period's, the lifetime allowance's) the chain has reached: its
    // latest block may be older than our clock (docs/decisions.md "A default start the chain has reached").
    const startAt = input.revocation === undefined ? startOnChain(now, yield* Effect.mapError(net.chain.headTimestamp, upstreamError)) : now
    const made = input.revocation === undefined
      ? makePolicySet(input, budgetTokens, now, minLifetimeMs, startAt)
      : makeRevocationPolicy({ ...input, revocation: input.revocation }, native, now, minLifetimeMs)
    if (made._tag === "Invalid") {
      return yield* new BadRequest({ message: made.message, ...(made.field === undefined ? {} : { details: { field: made.field } }) })
    }
    const policy = made.policy
    const delegatee = lower(input.delegateeAddress) as Address
    // Any address that can call the DelegationManager may be the delegate (an EOA, a smart account,
    // ours or not); one that never could is refused, not granted a grant nobody can use.
    const problem = delegateProblem(delegatee, account.address, deploymentContracts(network))
    if (problem !== undefined) return yield* new BadRequest({ message: `delegateeAddress cannot redeem this grant: ${problem}` })
    // No approver the agent controls (issue 41): the delegate, its signers on chain, its signer and accounts here, named redeemers.
    if (policy.approval !== undefined) {
      const own = yield* agentControl.controlledApprovers(
        { chainId: network.chainId, delegate: delegatee, redeemers: policy.redeemers?.addresses ?? [] },
        policy.approval.approvers
      )
      const first = own[0]
      if (first !== undefined) {
        const problem = approverProblem(first)
        return yield* new BadRequest({ message: problem.message, details: { field: problem.field } })
      }
    }
    // One delegation for the whole grant, every limit a caveat (Grant.ts); a limit the chain
    // cannot hold is a 400, never a grant that silently enforces less.
    const parties = { delegator: account.address as Address, delegate: delegatee, salt: randomSalt() }
    if (policy.revocation !== undefined && replacement !== undefined) {
      return yield* new BadRequest({ message: "a revocation grant has no budget to carry over: it cannot be replaced", details: { field: "delegationId" } })
    }
    // A replacement carries the old grant's spend per token; a basket's carried spend is not counted yet.
    if (policy.basket !== undefined && replacement !== undefined) {
      return yield* new BadRequest({ message: "a grant with a basket budget cannot replace another grant (yet): build a new grant", details: { field: "basket" } })
    }
    const onChain = replacement === undefined ? policy : lowered(policy, replacement.carried, decimalsOf)
    if (typeof onChain === "string") return yield* new BadRequest({ message: onChain, details: { field: "changes" } })
    const terms = policy.revocation === undefined ? grantTermsOf(onChain, decimalsOf, parties, startAt) : undefined
    const grant = policy.revocation !== undefined
      ? makeRevocationGrant(network.delegation, revocationTermsOf(policy, policy.revocation, parties))
      : terms === undefined
      ? { _tag: "Invalid" as const, message: "a budget or the per-action maximum cannot be expressed in its token's units" }
      : makeGrant(network.delegation, terms)
    if (grant._tag === "Invalid") return yield* new BadRequest({ message: `This grant cannot be enforced on chain: ${grant.message}` })
    // A revocation grant moves no token: its leg names the native coin (the table's column), never spent.
    const first = budgetTokens[0] ?? native
    const legs: ReadonlyArray<Leg> = [{
      permissionId: stack.permissionIdOf(grant.delegation),
      token: { symbol: first.symbol, address: first.address as Address, decimals: first.decimals },
      delegation: grant.delegation,
      scope: grant.scope
    }]
    // Every figure from the delegation the owner signs (read back from its caveats), the name last and quoted.
    const signed = decodeSignedTerms(grant.delegation, network.delegation)
    if ("problem" in signed) return yield* Effect.die(new Error(`the built grant cannot be stated: ${signed.problem}`))
    const known = [...budgetTokens, native, ...tokens.all.filter((t) => t.chainId === network.chainId)]
    const tokenOf = (address: string) => known.find((t) => lower(t.address) === lower(address))
    const limits = humanSummary(signed, tokenOf, {
      name: input.name,
      recipientNames: policy.recipientAllowlist.map((r) => ({ address: r.address, name: r.name }))
    }, Math.floor(now.getTime() / 1000), input.mandate?.note)
    const summary = replacement === undefined ? limits : `${replacement.summary} ${limits}`
    const buildId = `dbl_${crypto.randomUUID()}`
    const built = yield* builder.build({
      account,
      intentType: "delegation_enable",
      ...(queuedBehind === undefined || queuedBehind === 0 ? {} : { queuedBehind }),
      calls: [...(replacement?.leading ?? []), ...enableCalls(dm, legs.map((l) => l.delegation))],
      humanSummary: `${replacement === undefined ? "Enable this delegation." : "Replace a grant with this delegation."} ${summary}`,
      metadata: {
        delegationBuildId: buildId,
        permissionIds: legs.map((l) => l.permissionId),
        ...(replacement === undefined ? {} : { replacesDelegationId: replacement.delegationId })
      }
    })
    const expiresAt = new Date(built.build.expiresAt ?? new Date(now.getTime() + 10 * 60_000).toISOString())
    yield* repo.insertBuild({
      id: buildId,
      opBuildId: built.buildId,
      signerAddress: lower(signer.address),
      accountId: account.id,
      name: input.name,
      kind: input.kind,
      delegateeAddress: delegatee,
      chainId: network.chainId,
      policySet: policy,
      humanSummary: summary,
      legs,
      userOpHash: built.build.userOpHash,
      createdAt: now,
      expiresAt,
      ...(replacement === undefined ? {} : { replaces: { delegationId: replacement.delegationId, carried: replacement.carried } }),
      ...(input.mandate === undefined ? {} : { mandate: input.mandate.ref })
    })
    const simulation = built.build.simulation
    if (simulation === null) return yield* Effect.die(new Error("builder answered no simulation"))
    return {
      policySet: policy,
      humanSummary: summary,
      enableUserOp: built.build.userOp,
      userOpHash: built.build.userOpHash,
      simulation,
      ...(built.build.buildId === undefined ? {} : { buildId: built.build.buildId }),
      ...(built.build.typedData === undefined ? {} : { typedData: built.build.typedData }),
      ...(built.build.expiresAt === undefined ? {} : { expiresAt: built.build.expiresAt }),
      delegations: legs.map((l) => {
        const td = legTypedData(l.delegation, network.chainId, dm)
        return {
          permissionId: l.permissionId,
          token: { symbol: l.token.symbol, chainId: network.chainId, address: l.token.address },
          tokens: budgetTokens.map((t) => ({ symbol: t.symbol, chainId: network.chainId, address: t.address })),
          delegation: l.delegation,
          typedData: {
            domain: { ...td.domain, verifyingContract: lower(td.domain.verifyingContract) },
            types: Object.fromEntries(Object.entries(td.types).map(([k, v]) => [k, v.map((f) => ({ ...f }))])),
            primaryType: td.primaryType,
            message: { ...td.message, caveats: td.message.caveats.map((c) => ({ ...c })), salt: td.message.salt.toString() }
          }
        }
      })
    } satisfies typeof DelegationBuild.Type
  })

  // ---------------------------------------------------------------------------------
  // Enable

  /** Moves a pending delegation to active (with its snapshot) or failed, once, by its enable hash. */
  const settleEnable = (userOpHash: string, outcome: EnableOutcome) =>
    Effect.gen(function*() {
      const row = yield* repo.lockByEnableHash(userOpHash)
      if (row === undefined || row.status !== "pending") return
      const dm = managerOf(row.chain_id)
      const enabled = new Set(dm === undefined ? [] : enabledPermissionIds(dm, outcome.logs).map(lower))
      const allEnabled = row.legs.every((l) => enabled.has(lower(l.permissionId)))
      if (allEnabled) {
        yield* repo.activate(row.id, outcome.transactionHash)
        // A replacement: the same operation disabled the grant it replaces (its first call; the chain refuses it otherwise).
        if (row.replaces !== null) yield* retireReplaced(row.replaces, outcome.transactionHash)
        yield* repo.insertSnapshot({
          id: `psn_${crypto.randomUUID()}`,
          delegationId: row.id,
          permissionId: row.permission_id,
          policySet: row.policy_set,
          humanSummary: row.human_summary,
          enableTxHash: outcome.transactionHash
        })
      } else {
        yield* repo.failPending(row.id, "the operation executed without enabling every delegation")
      }
    }).pipe(repo.withTransaction, Effect.orDie)

  const retireReplaced = (oldId: string, txHash: string) =>
    Effect.gen(function*() {
      const old = yield* repo.findById(oldId)
      if (old === undefined) return
      yield* repo.disableLegs(old.legs.map((l) => lower(l.permissionId)), old.delegator_address, txHash)
      const revoked = yield* repo.revokeFullyDisabled([old.id], txHash)
      if (revoked.length > 0) yield* repo.releaseForDelegations(revoked)
    })

  const answerEnable = (id: string) =>
    Effect.gen(function*() {
      const row = (yield* repo.findById(id))!
      switch (row.status) {
        case "active":
        case "revoked":
          return (yield* render([row]))[0]!
        case "failed":
          return yield* new Conflict({
            message: `The enable operation did not execute (${row.failure_reason ?? "unknown"}); no delegation was created. Build again.`,
            details: { userOpHash: row.enable_user_op_hash }
          })
        case "pending": {
          // What the relay knows (sent yet, the bundler's last refusal or fault): a slow enable says why.
          const relayState = yield* repo.relayStateByHash(row.enable_user_op_hash, row.chain_id)
          return yield* new UpstreamTimeout({
            message: "The enable operation was relayed but has not executed yet; repeat this request to get its result",
            details: {
              userOpHash: row.enable_user_op_hash,
              delegationId: row.id,
              ...(relayState === undefined ? {} : { sentToBundler: relayState.sent }),
              ...(relayState?.lastError == null ? {} : { lastError: relayState.lastError })
            }
          })
        }
      }
    })

  /**
   * Waits (bounded) for the relayed enable to settle. Execution activates the delegation
   * inside the relay's settlement (the on-executed hook); a failed operation fails it here.
   */
  const awaitEnable = (signer: Signer, chainId: number, userOpHash: string, first?: UserOpReceipt) =>
    Effect.gen(function*() {
      const stored = yield* repo.operationIdByHash(userOpHash, chainId)
      const opId = first?.userOpId ?? stored
      if (opId === undefined) return
      const deadline = Date.now() + Duration.toMillis(enableWait)
      let receipt = first ?? (yield* relay.get(signer.address, opId).pipe(Effect.orDie))
      while (receipt.status === "submitted" && Date.now() < deadline) {
        yield* Effect.sleep(Duration.millis(250))
        receipt = yield* relay.get(signer.address, opId).pipe(Effect.orDie)
      }
      if (receipt.status === "failed" || (receipt.status === "included" && receipt.outcome !== "mined")) {
        const reason = `${receipt.outcome}${receipt.reason === undefined ? "" : `: ${receipt.reason}`}`
        yield* repo.failPendingByEnableHash(userOpHash, reason)
      }
    })

  const create = Effect.fn("Delegations.create")(function*(signer: Signer, input: CreateInput) {
    if (input.intentType !== "delegation_enable") {
      return yield* new BadRequest({ message: "POST /delegations takes the signed enable operation (intentType delegation_enable)" })
    }
    const op = input.userOp
    const { network } = yield* chains.get(op.chainId)
    const dm = network.delegation.DelegationManager
    if (lower(op.entryPoint) !== lower(network.entryPoint)) {
      return yield* new BadRequest({ message: `The operation is for another EntryPoint (chain ${network.chainId} uses ${network.entryPoint})` })
    }
    const userOpHash = yield* Effect.try({
      try: () => userOpHashOf(fromWire(op), network.chainId, network.entryPoint),
      // viem refuses values its packing cannot hold (a nonce ≥ 2^256, a gas limit ≥ 2^128).
      catch: () => new BadRequest({ message: "The operation cannot be encoded (a nonce, gas or fee value out of range)" })
    })
    if (lower(input.userOpHash) !== userOpHash) {
      return yield* new BadRequest({ message: "userOpHash is not the hash of this operation", details: { expected: userOpHash } })
    }
    const dbuild = yield* repo.findBuildByHash(userOpHash, lower(signer.address))
    if (dbuild === undefined) {
      return yield* new BadRequest({ message: "This operation is not a delegation enable built for this signer (POST /delegations/build first)" })
    }
    // A repeated request: answer from what happened (waiting again while pending).
    const existing = yield* repo.findByBuild(dbuild.id)
    if (existing !== undefined) {
      if (existing.status === "pending") yield* awaitEnable(signer, network.chainId, userOpHash)
      return yield* answerEnable(existing.id)
    }
    if (dbuild.expires_at.getTime() <= Date.now()) {
      return yield* new BadRequest({ message: "This delegation build has expired; build it again" })
    }
    // The owner's signature of every leg: checked here (the chain checks it again at each redemption).
    const signatures = input.delegationSignatures ?? []
    const signedLegs: Array<Leg> = []
    for (const leg of dbuild.legs) {
      const sig = signatures.find((s) => lower(s.permissionId) === lower(leg.permissionId))
      if (sig === undefined) {
        return yield* new BadRequest({
          message: `delegationSignatures must carry the owner's EIP-712 signature of each delegation of the build (missing ${leg.permissionId})`
        })
      }
      const recovered = yield* Effect.tryPromise(() => recoverLegSigner(leg.delegation, sig.signature as Hex, network.chainId, dm)).pipe(
        Effect.orElseSucceed(() => undefined)
      )
      if (recovered === undefined || lower(recovered) !== lower(signer.address)) {
        return yield* new BadRequest({ message: `The signature of delegation ${leg.permissionId} is not the account owner's` })
      }
      signedLegs.push({ ...leg, delegation: { ...leg.delegation, signature: sig.signature as Hex } })
    }
    const id = `dlg_${crypto.randomUUID()}`
    const account = yield* accounts.findById(signer.address, dbuild.account_id).pipe(
      Effect.mapError(() => new BadRequest({ message: "The build's account is gone" }))
    )
    const insertPending = Effect.gen(function*() {
      const inserted = yield* repo.insertPending({
        id,
        buildId: dbuild.id,
        signerAddress: lower(signer.address),
        accountId: dbuild.account_id,
        delegatorAddress: lower(account.address),
        permissionId: signedLegs[0]!.permissionId,
        name: dbuild.name,
        kind: dbuild.kind,
        icon: iconOf(dbuild.kind),
        delegateeAddress: dbuild.delegatee_address,
        chainId: dbuild.chain_id,
        policySet: dbuild.policy_set,
        humanSummary: dbuild.human_summary,
        legs: signedLegs,
        enableUserOpHash: userOpHash,
        ...(dbuild.replaces === null || dbuild.carried === null ? {} : { replaces: { delegationId: dbuild.replaces, carried: dbuild.carried } }),
        ...(dbuild.mandate === null ? {} : { mandate: dbuild.mandate })
      })
      if (!inserted) return yield* new Conflict({ message: "This enable operation is already being relayed; repeat the request" })
      // The enable's audit entry (written when it settles, through the relay or around it) names the delegation.
      yield* repo.nameEnableBuild(dbuild.chain_id, userOpHash, id)
      for (const leg of signedLegs) {
        yield* repo.insertLeg({
          permissionId: leg.permissionId,
          delegationId: id,
          delegatorAddress: lower(account.address),
          tokenAddress: lower(leg.token.address)
        })
      }
    }).pipe(repo.withTransaction, Effect.catchTag("SqlError", Effect.die))
    yield* insertPending
    const submitted = yield* relay.submit(signer.address, op).pipe(
      Effect.tapError((e) =>
        // 503/504: the relay stored the operation and will send it (the chain's bundler is down or slow);
        // its settlement decides the delegation.
        e._tag === "ServiceUnavailable" || e._tag === "UpstreamTimeout"
          ? Effect.void
          : repo.failPending(id, `refused by the relay: ${e.message}`))
    )
    yield* awaitEnable(signer, network.chainId, userOpHash, submitted)
    return yield* answerEnable(id)
  })


  return { build, create, settleEnable }
})

export type Enable = Effect.Success<ReturnType<typeof makeEnable>>

/**
 * The policy as the chain holds a replacement: every budget and the action count less what the
 * replaced grant had spent (so the new totals are limits of the whole); a message when a new
 * total is not above what was spent.
 */
const lowered = (policy: PolicySet, carried: Carried, decimalsOf: (address: string) => number): PolicySet | string => {
  const budgets: Array<PolicySet["budgets"][number]> = []
  for (const b of policy.budgets) {
    const address = lower(b.token.address ?? "")
    const decimals = decimalsOf(address)
    const spent = BigInt(carried.units[address] ?? "0")
    const total = toUnits(b.amount, decimals) ?? 0n
    if (total <= spent) {
      return `changes: the new ${b.token.symbol} budget (${b.amount}) must be above what the grant already spent (${fromUnits(spent, decimals)})`
    }
    budgets.push({ ...b, amount: fromUnits(total - spent, decimals) })
  }
  if (policy.maxActions <= carried.actions) {
    return `changes: the new maxActions (${policy.maxActions}) must be above the actions the grant already took (${carried.actions})`
  }
  return { ...policy, budgets, maxActions: policy.maxActions - carried.actions }
}

export const failureText = (failure: BundlerReceipt | string) =>
  typeof failure === "string" ? failure : `reverted: ${failure.reason ?? "the operation's call reverted"}`

const iconOf = (kind: string) => {
  const k = kind.toLowerCase()
  return k === "dapp" ? "dapp" : k === "agent" ? "agent" : k === "bot" ? "bot" : "key"
}
