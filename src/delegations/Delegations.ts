/**
 * Delegations end to end: build (policy + legs + enable operation), create (relay the
 * signed enable, activate only when it executed), reads, actions (evaluate under a row
 * lock, reserve, build the delegate's redeem operation), revoke builds, and the relay
 * hooks (re-check at submit; settle at a terminal status). Rules: docs/delegations.md.
 */
import { Config, Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Address, Hash, Hex } from "viem"
import { Accounts, toAccount } from "../accounts/Accounts.ts"
import { AccountRules } from "../accounts/Rules.ts"
import { chainNameOf } from "../accounts/AccountFactoryLive.ts"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, Conflict, NotFound, OutOfScope, UpstreamTimeout } from "../api/Errors.ts"
import type { CurrentSigner } from "../auth/Middleware.ts"
import { type BuildError, OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { fromWire, userOpHashOf } from "../builds/Wire.ts"
import { AccountStack } from "../chain/Accounts4337.ts"
import type { UserOpReceipt as BundlerReceipt, UserOpLog } from "../chain/Bundler.ts"
import { Chain } from "../chain/Chain.ts"
import { Network } from "../chain/Network.ts"
import { type UserOperation, UserOpBuild, type UserOpReceipt } from "../domain/Operations.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import {
  type Delegation as DfDelegation,
  disabledPermissionIds,
  enableCalls,
  enabledPermissionIds,
  legTypedData,
  randomSalt,
  recoverLegSigner,
  redeemCall,
} from "./Caveats.ts"
import { freezeCalls, legStates, revokeCallDataOf } from "./FreezeState.ts"
import { grantTermsOf, makeGrant, redeemArgs, type GrantScope } from "./Grant.ts"
import { makeUsage } from "./Usage.ts"
import { type Delegation, DelegationBuild, type DelegationStatus, type PolicySet, type PolicySnapshotType } from "./Domain.ts"
import { DeclineRecorder, Relay, type RelayedOperation, RelayHooks } from "./Ports.ts"
import {
  type ActionInput,
  evaluate,
  fromUnits,
  humanSummary,
  makePolicySet,
  type PolicyState,
  visibleStatus
} from "./Policy.ts"

type Signer = CurrentSigner["Service"]

/**
 * A leg as stored: the DF delegation (signed once created). A grant has one leg (Grant.ts)
 * covering every budget token (`scope`); `token` is then the first budget token.
 */
interface Leg {
  readonly permissionId: Hash
  readonly token: { readonly symbol: string; readonly address: Address; readonly decimals: number }
  readonly delegation: DfDelegation
  readonly scope?: GrantScope
}

interface DelegationRow {
  readonly id: string
  readonly build_id: string
  readonly signer_address: string
  readonly account_id: string
  readonly delegator_address: string
  readonly permission_id: string
  readonly name: string
  readonly kind: string
  readonly icon: string
  readonly delegatee_address: string
  readonly chain_id: number
  readonly policy_set: PolicySet
  readonly human_summary: string
  readonly legs: ReadonlyArray<Leg>
  readonly status: PolicyState["status"]
  readonly enable_user_op_hash: string
  readonly enable_tx_hash: string | null
  readonly failure_reason: string | null
  readonly created_at: Date
  readonly frozen: boolean
}

interface EnableOutcome {
  readonly status: "executed"
  readonly transactionHash: string
  readonly logs: ReadonlyArray<UserOpLog>
}

interface BuildRow {
  readonly id: string
  readonly op_build_id: string
  readonly signer_address: string
  readonly account_id: string
  readonly name: string
  readonly kind: string
  readonly delegatee_address: string
  readonly chain_id: number
  readonly policy_set: PolicySet
  readonly human_summary: string
  readonly legs: ReadonlyArray<Leg>
  readonly user_op_hash: string
  readonly expires_at: Date
}

export interface BuildInput {
  readonly name: string
  readonly kind: string
  readonly delegateeAddress: string
  readonly chainId: number
  readonly budgets: ReadonlyArray<{ readonly token: { readonly symbol: string }; readonly amount: number }>
  readonly perActionMax?: { readonly token: { readonly symbol: string }; readonly amount: number }
  readonly maxActions?: number
  readonly recipientAllowlist?: ReadonlyArray<{ readonly name: string; readonly address: string; readonly chainId: number }>
  readonly allowedActions?: ReadonlyArray<{ readonly name: string; readonly target: string; readonly selectors: ReadonlyArray<string> }>
  readonly expiresAt?: string
  readonly accountId?: string
}

export interface CreateInput {
  readonly userOp: UserOperation
  readonly userOpHash: string
  readonly intentType: string
  readonly delegationSignatures?: ReadonlyArray<{ readonly permissionId: string; readonly signature: string }>
}

export interface Reservation {
  readonly id: string
  readonly delegationId: string
  readonly units: bigint
  readonly token: Address
  readonly recipient: Address
}

/** How long `POST /delegations` waits for the enable to settle before answering 504. */
export const EnableWait = Config.Duration("DELEGATION_ENABLE_WAIT").pipe(Config.withDefault(Duration.seconds(30)))
/** How long an action build holds its reservation if it is never relayed. */
export const ReservationTtl = Config.Duration("DELEGATION_RESERVATION_TTL").pipe(Config.withDefault(Duration.minutes(10)))
/** The shortest delegation lifetime a build accepts (an already-expiring grant is usually a mistake). */
export const MinLifetime = Config.Duration("DELEGATION_MIN_LIFETIME").pipe(Config.withDefault(Duration.minutes(1)))

const lower = <S extends string>(s: S) => s.toLowerCase() as S
const noAddress = <T extends { readonly token: { readonly symbol: string; readonly chainId: number } }>(x: T) => ({
  ...x,
  token: { symbol: x.token.symbol, chainId: x.token.chainId }
})
/** Delegation list and detail responses carry token refs without addresses (the contract's TokenRef note). */
const policyForDetail = (p: PolicySet): PolicySet => ({
  ...p,
  budgets: p.budgets.map(noAddress),
  perActionMax: noAddress(p.perActionMax)
})

export class Delegations extends Context.Service<Delegations, {
  build(signer: Signer, input: BuildInput): Effect.Effect<typeof DelegationBuild.Type, BadRequest | NotFound | BuildError>
  create(signer: Signer, input: CreateInput): Effect.Effect<Delegation, BadRequest | NotFound | Conflict | BuildError>
  list(
    signer: Signer,
    query: { readonly status?: DelegationStatus; readonly accountId?: string; readonly role?: "owner" | "delegatee" }
  ): Effect.Effect<ReadonlyArray<Delegation>, NotFound>
  get(signer: Signer, id: string): Effect.Effect<Delegation, NotFound>
  snapshots(signer: Signer, id: string): Effect.Effect<ReadonlyArray<PolicySnapshotType>, NotFound>
  /** Evaluates and reserves under the delegation's row lock; `OutOfScope` (recorded) on a decline. */
  reserve(signer: Signer, id: string, action: ActionInput): Effect.Effect<Reservation, BadRequest | NotFound | OutOfScope>
  act(signer: Signer, id: string, action: ActionInput): Effect.Effect<UserOpBuild, BadRequest | NotFound | BuildError>
  revoke(signer: Signer, id: string): Effect.Effect<UserOpBuild, BadRequest | NotFound | BuildError>
  /** Relay policy check (registered for `delegated_action`): re-checks the action's reservation under the row lock. */
  beforeSubmit(build: StoredBuild, operation: { readonly id: string; readonly userOpHash: string }): Effect.Effect<void, OutOfScope>
}>()("das/delegations/Delegations") {
  static readonly layer = Layer.effect(Delegations, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const accounts = yield* Accounts
  const tokens = yield* TokenRegistry
  const builder = yield* OperationBuilder
  const stack = yield* AccountStack
  const chain = yield* Chain
  const network = yield* Network
  const relay = yield* Relay
  const rules = yield* AccountRules
  const hooks = yield* RelayHooks
  const declines = yield* DeclineRecorder
  const enableWait = yield* EnableWait
  const reservationTtl = yield* ReservationTtl
  const minLifetimeMs = Duration.toMillis(yield* MinLifetime)
  const dm = network.delegation.DelegationManager

  const decimalsOf = (address: string) => tokens.byAddress(network.chainId, address)?.decimals ?? 18
  const usageOf = yield* makeUsage(decimalsOf)

  // ---------------------------------------------------------------------------------
  // Rows

  const selectDelegation = (where: ReturnType<typeof sql.and>) =>
    sql<DelegationRow>`SELECT d.*, a.frozen FROM delegations d JOIN accounts a ON a.id = d.account_id WHERE ${where}`.pipe(
      Effect.orDie
    )

  const findOwn = (signer: Signer, id: string) =>
    selectDelegation(sql.and([sql`d.id = ${id}`, sql`d.signer_address = ${lower(signer.address)}`])).pipe(
      Effect.flatMap((rows) => {
        const row = rows[0]
        return row === undefined || row.status === "pending" || row.status === "failed"
          ? Effect.fail(new NotFound({ message: `No delegation ${id}` }))
          : Effect.succeed(row)
      })
    )

  /**
   * The delegatee's lane (docs/delegations.md): a grant held by one of the signer's accounts. The holder reads
   * it (limits, what remains) and builds its own actions; it cannot revoke it and sees no other grant of the owner.
   */
  const findHeld = (signer: Signer, id: string) =>
    selectDelegation(sql.and([
      sql`d.id = ${id}`,
      sql`d.delegatee_address IN (SELECT address FROM accounts WHERE signer_address = ${lower(signer.address)})`
    ])).pipe(
      Effect.flatMap((rows) => {
        const row = rows[0]
        return row === undefined || row.status === "pending" || row.status === "failed"
          ? Effect.fail(new NotFound({ message: `No delegation ${id}` }))
          : Effect.succeed(row)
      })
    )

  /** The owner's grant, or one the signer holds; anyone else's is answered as if it did not exist. */
  const findUsable = (signer: Signer, id: string) => findOwn(signer, id).pipe(Effect.catchTag("NotFound", () => findHeld(signer, id)))

  const toDelegation = (row: DelegationRow, spentToDate: Delegation["spentToDate"], now: Date): Delegation => {
    const status = visibleStatus(row.status, row.policy_set.expiresAt, row.frozen, now)
    return {
      id: row.id,
      permissionId: row.permission_id,
      name: row.name,
      kind: row.kind,
      icon: row.icon,
      delegateeAddress: row.delegatee_address,
      chain: chainNameOf(row.chain_id),
      chainId: row.chain_id,
      status: status === "pending" || status === "failed" ? "revoked" : status,
      humanSummary: row.human_summary,
      policySet: policyForDetail(row.policy_set),
      spentToDate
    }
  }

  /** Each row with its `spentToDate`, reconciled with the enforcers' state on chain (Usage.ts). */
  const render = (rows: ReadonlyArray<DelegationRow>) => {
    const now = new Date()
    return Effect.forEach(
      rows,
      (r) => Effect.map(usageOf.spentToDate(r, now), (spent) => toDelegation(r, spent, now)),
      { concurrency: 8 }
    ).pipe(Effect.orDie)
  }

  // ---------------------------------------------------------------------------------
  // Build

  const build = Effect.fn("Delegations.build")(function*(signer: Signer, input: BuildInput) {
    const account = yield* accounts.resolve(signer.address, input.accountId)
    if (input.chainId !== network.chainId) {
      return yield* new BadRequest({ message: `chainId ${input.chainId} is not served here (this service runs chain ${network.chainId})` })
    }
    const budgetTokens = yield* Effect.forEach(input.budgets, (b) => tokens.resolve(input.chainId, b.token.symbol))
    const now = new Date()
    const made = makePolicySet(input, budgetTokens, now, minLifetimeMs)
    if (made._tag === "Invalid") return yield* new BadRequest({ message: made.message })
    const policy = made.policy
    const delegatee = lower(input.delegateeAddress) as Address
    // One delegation for the whole grant, every limit a caveat (Grant.ts); a limit the chain
    // cannot hold is a 400, never a grant that silently enforces less.
    const terms = grantTermsOf(policy, decimalsOf, { delegator: account.address as Address, delegate: delegatee, salt: randomSalt() }, now)
    const grant = terms === undefined
      ? { _tag: "Invalid" as const, message: "a budget or the per-action maximum cannot be expressed in its token's units" }
      : makeGrant(network.delegation, terms)
    if (grant._tag === "Invalid") return yield* new BadRequest({ message: `This grant cannot be enforced on chain: ${grant.message}` })
    const first = budgetTokens[0]!
    const legs: ReadonlyArray<Leg> = [{
      permissionId: stack.permissionIdOf(grant.delegation),
      token: { symbol: first.symbol, address: first.address as Address, decimals: first.decimals },
      delegation: grant.delegation,
      scope: grant.scope
    }]
    const summary = humanSummary(policy, delegatee, input.name)
    const buildId = `dbl_${crypto.randomUUID()}`
    const built = yield* builder.build({
      account,
      intentType: "delegation_enable",
      calls: enableCalls(dm, legs.map((l) => l.delegation)),
      humanSummary: `Enable delegation "${input.name}". ${summary}`,
      metadata: { delegationBuildId: buildId, permissionIds: legs.map((l) => l.permissionId) }
    })
    const expiresAt = new Date(built.build.expiresAt ?? new Date(now.getTime() + 10 * 60_000).toISOString())
    yield* sql`
      INSERT INTO delegation_builds (id, op_build_id, signer_address, account_id, name, kind, delegatee_address, chain_id,
                                     policy_set, human_summary, legs, user_op_hash, created_at, expires_at)
      VALUES (${buildId}, ${built.buildId}, ${lower(signer.address)}, ${account.id}, ${input.name}, ${input.kind}, ${delegatee},
              ${network.chainId}, ${JSON.stringify(policy)}::jsonb, ${summary}, ${JSON.stringify(legs)}::jsonb,
              ${built.build.userOpHash}, ${now}, ${expiresAt})`.pipe(Effect.orDie)
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
      const rows = yield* sql<DelegationRow>`
        SELECT d.*, false AS frozen FROM delegations d WHERE d.enable_user_op_hash = ${userOpHash} FOR UPDATE`
      const row = rows[0]
      if (row === undefined || row.status !== "pending") return
      const enabled = new Set(enabledPermissionIds(dm, outcome.logs).map(lower))
      const allEnabled = row.legs.every((l) => enabled.has(lower(l.permissionId)))
      if (allEnabled) {
        yield* sql`UPDATE delegations SET status = 'active', enable_tx_hash = ${outcome.transactionHash}, activated_at = now()
                   WHERE id = ${row.id} AND status = 'pending'`
        yield* sql`
          INSERT INTO policy_snapshots (id, delegation_id, permission_id, policy_set, human_summary, captured_at, enable_tx_hash)
          VALUES (${`psn_${crypto.randomUUID()}`}, ${row.id}, ${row.permission_id}, ${JSON.stringify(row.policy_set)}::jsonb,
                  ${row.human_summary}, now(), ${outcome.transactionHash})`
      } else {
        yield* sql`UPDATE delegations SET status = 'failed', failure_reason = 'the operation executed without enabling every delegation'
                   WHERE id = ${row.id} AND status = 'pending'`
      }
    }).pipe(sql.withTransaction, Effect.orDie)

  const answerEnable = (id: string) =>
    Effect.gen(function*() {
      const rows = yield* selectDelegation(sql.and([sql`d.id = ${id}`]))
      const row = rows[0]!
      switch (row.status) {
        case "active":
        case "revoked":
          return (yield* render([row]))[0]!
        case "failed":
          return yield* new Conflict({
            message: `The enable operation did not execute (${row.failure_reason ?? "unknown"}); no delegation was created. Build again.`,
            details: { userOpHash: row.enable_user_op_hash }
          })
        case "pending":
          return yield* new UpstreamTimeout({
            message: "The enable operation was relayed but has not executed yet; repeat this request to get its result",
            details: { userOpHash: row.enable_user_op_hash, delegationId: row.id }
          })
      }
    })

  /**
   * Waits (bounded) for the relayed enable to settle. Execution activates the delegation
   * inside the relay's settlement (the on-executed hook); a failed operation fails it here.
   */
  const awaitEnable = (signer: Signer, userOpHash: string, first?: UserOpReceipt) =>
    Effect.gen(function*() {
      const ops = yield* sql<{ id: string }>`SELECT id FROM user_operations WHERE user_op_hash = ${userOpHash} AND chain_id = ${network.chainId}`.pipe(Effect.orDie)
      const opId = first?.userOpId ?? ops[0]?.id
      if (opId === undefined) return
      const deadline = Date.now() + Duration.toMillis(enableWait)
      let receipt = first ?? (yield* relay.get(signer.address, opId).pipe(Effect.orDie))
      while (receipt.status === "submitted" && Date.now() < deadline) {
        yield* Effect.sleep(Duration.millis(250))
        receipt = yield* relay.get(signer.address, opId).pipe(Effect.orDie)
      }
      if (receipt.status === "failed" || (receipt.status === "included" && receipt.outcome !== "mined")) {
        const reason = `${receipt.outcome}${receipt.reason === undefined ? "" : `: ${receipt.reason}`}`
        yield* sql`UPDATE delegations SET status = 'failed', failure_reason = ${reason}
                   WHERE enable_user_op_hash = ${userOpHash} AND status = 'pending'`.pipe(Effect.orDie)
      }
    })

  const create = Effect.fn("Delegations.create")(function*(signer: Signer, input: CreateInput) {
    if (input.intentType !== "delegation_enable") {
      return yield* new BadRequest({ message: "POST /delegations takes the signed enable operation (intentType delegation_enable)" })
    }
    const op = input.userOp
    if (op.chainId !== network.chainId || lower(op.entryPoint) !== lower(network.entryPoint)) {
      return yield* new BadRequest({ message: "The operation is for another chain or EntryPoint" })
    }
    const userOpHash = yield* Effect.try({
      try: () => userOpHashOf(fromWire(op), network.chainId, network.entryPoint),
      // viem refuses values its packing cannot hold (a nonce ≥ 2^256, a gas limit ≥ 2^128).
      catch: () => new BadRequest({ message: "The operation cannot be encoded (a nonce, gas or fee value out of range)" })
    })
    if (lower(input.userOpHash) !== userOpHash) {
      return yield* new BadRequest({ message: "userOpHash is not the hash of this operation", details: { expected: userOpHash } })
    }
    const builds = yield* sql<BuildRow>`
      SELECT * FROM delegation_builds WHERE user_op_hash = ${userOpHash} AND signer_address = ${lower(signer.address)}`.pipe(Effect.orDie)
    const dbuild = builds[0]
    if (dbuild === undefined) {
      return yield* new BadRequest({ message: "This operation is not a delegation enable built for this signer (POST /delegations/build first)" })
    }
    // A repeated request: answer from what happened (waiting again while pending).
    const existing = yield* sql<{ id: string; status: string }>`SELECT id, status FROM delegations WHERE build_id = ${dbuild.id}`.pipe(Effect.orDie)
    if (existing[0] !== undefined) {
      if (existing[0].status === "pending") yield* awaitEnable(signer, userOpHash)
      return yield* answerEnable(existing[0].id)
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
      const inserted = yield* sql<{ id: string }>`
        INSERT INTO delegations (id, build_id, signer_address, account_id, delegator_address, permission_id, name, kind, icon,
                                 delegatee_address, chain_id, policy_set, human_summary, legs, status, enable_user_op_hash, created_at)
        VALUES (${id}, ${dbuild.id}, ${lower(signer.address)}, ${dbuild.account_id}, ${lower(account.address)},
                ${signedLegs[0]!.permissionId}, ${dbuild.name}, ${dbuild.kind}, ${iconOf(dbuild.kind)}, ${dbuild.delegatee_address},
                ${dbuild.chain_id}, ${JSON.stringify(dbuild.policy_set)}::jsonb, ${dbuild.human_summary},
                ${JSON.stringify(signedLegs)}::jsonb, 'pending', ${userOpHash}, now())
        ON CONFLICT DO NOTHING
        RETURNING id`
      if (inserted.length === 0) return yield* new Conflict({ message: "This enable operation is already being relayed; repeat the request" })
      // The enable's audit entry (written when it settles, through the relay or around it) names the delegation.
      yield* sql`UPDATE op_builds SET metadata = metadata || ${JSON.stringify({ delegationId: id })}::jsonb
                 WHERE chain_id = ${dbuild.chain_id} AND user_op_hash = ${userOpHash} AND intent_type = 'delegation_enable'`
      for (const leg of signedLegs) {
        yield* sql`INSERT INTO delegation_legs (permission_id, delegation_id, delegator_address, token_address)
                   VALUES (${leg.permissionId}, ${id}, ${lower(account.address)}, ${lower(leg.token.address)})`
      }
    }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
    yield* insertPending
    const submitted = yield* relay.submit(signer.address, op).pipe(
      Effect.tapError((e) =>
        // 502/504: the relay stored the operation and will send it; its settlement decides the delegation.
        e._tag === "UpstreamUnavailable" || e._tag === "UpstreamTimeout"
          ? Effect.void
          : sql`UPDATE delegations SET status = 'failed', failure_reason = ${`refused by the relay: ${e.message}`}
            WHERE id = ${id} AND status = 'pending'`.pipe(Effect.orDie))
    )
    yield* awaitEnable(signer, userOpHash, submitted)
    return yield* answerEnable(id)
  })

  // ---------------------------------------------------------------------------------
  // Reads

  const list = Effect.fn("Delegations.list")(function*(
    signer: Signer,
    query: { readonly status?: DelegationStatus; readonly accountId?: string; readonly role?: "owner" | "delegatee" }
  ) {
    const account = yield* accounts.resolve(signer.address, query.accountId)
    const rows = yield* selectDelegation(sql.and(
      query.role === "delegatee"
        ? [
          // Grants the account holds (any owner's), never the holder's own grants to others.
          sql`d.delegatee_address = ${lower(account.address)}`,
          sql`d.status IN ('active', 'revoked')`
        ]
        : [
          sql`d.account_id = ${account.id}`,
          sql`d.signer_address = ${lower(signer.address)}`,
          sql`d.status IN ('active', 'revoked')`
        ]
    ))
    const sorted = [...rows].sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? -1 : 1))
    const all = yield* render(sorted)
    return query.status === undefined ? all : all.filter((d) => d.status === query.status)
  })

  const get = Effect.fn("Delegations.get")(function*(signer: Signer, id: string) {
    const row = yield* findUsable(signer, id)
    return (yield* render([row]))[0]!
  })

  const snapshots = Effect.fn("Delegations.snapshots")(function*(signer: Signer, id: string) {
    yield* findOwn(signer, id)
    const rows = yield* sql<{
      id: string
      delegation_id: string
      permission_id: string
      policy_set: PolicySet
      human_summary: string
      captured_at: Date
      enable_tx_hash: string
    }>`SELECT * FROM policy_snapshots WHERE delegation_id = ${id} ORDER BY captured_at, id`.pipe(Effect.orDie)
    return rows.map((r) => ({
      id: r.id,
      delegationId: r.delegation_id,
      permissionId: r.permission_id,
      policySet: r.policy_set,
      humanSummary: r.human_summary,
      capturedAt: r.captured_at.toISOString(),
      enableTxHash: r.enable_tx_hash
    }))
  })

  // ---------------------------------------------------------------------------------
  // Actions: evaluate + reserve under the row lock

  /**
   * Executed, submitted and unexpired reserved actions (excluding `exceptId`), reconciled
   * with the enforcers' state on chain (Usage.ts). A submitted reservation counts until the
   * relay settles its operation: `final` (on-executed hook) or `released` (on-failed hook),
   * both in the settlement's own transaction.
   */
  const usage = (row: DelegationRow, exceptId?: string) => usageOf.stateOf(row, exceptId)

  const lockDelegation = (id: string) =>
    sql<DelegationRow>`
      SELECT d.*, a.frozen FROM delegations d JOIN accounts a ON a.id = d.account_id
      WHERE d.id = ${id} FOR UPDATE OF d`.pipe(Effect.map((rows) => rows[0]))

  const decline = (row: DelegationRow, reason: string, message: string, action: ActionInput, resetsAt?: string) =>
    Effect.gen(function*() {
      const eventId = yield* declines.record({
        accountId: row.account_id,
        delegationId: row.id,
        chainId: row.chain_id,
        actor: row.delegatee_address,
        reason,
        amount: action.amount,
        token: action.token ?? row.policy_set.perActionMax.token.symbol
      })
      return yield* new OutOfScope({
        message,
        declineReason: reason,
        details: { auditEventId: eventId, delegationId: row.id, ...(resetsAt === undefined ? {} : { resetsAt }) }
      })
    })

  /**
   * `open`: the reservation of an identical open action build, answered again when the
   * action is still allowed (evaluated as if that reservation were this request's).
   */
  const reserveFor = Effect.fn("Delegations.reserve")(function*(signer: Signer, id: string, action: ActionInput, open?: string) {
    yield* findUsable(signer, id)
    const ttlMs = Duration.toMillis(reservationTtl)
    const verdict = yield* Effect.gen(function*() {
      const row = (yield* lockDelegation(id))!
      const use = yield* usage(row, open)
      const result = evaluate(row.policy_set, decimalsOf, { status: row.status, accountFrozen: row.frozen, ...use }, action, new Date())
      if (result._tag !== "Allowed") return { row, result, reservation: undefined }
      if (open !== undefined) return { row, result, reservation: undefined }
      const reservation: Reservation = {
        id: `rsv_${crypto.randomUUID()}`,
        delegationId: id,
        units: result.units,
        token: result.token.address as Address,
        recipient: result.recipient as Address
      }
      yield* sql`
        INSERT INTO delegation_reservations (id, delegation_id, token_address, units, recipient, status, expires_at, created_at)
        VALUES (${reservation.id}, ${id}, ${reservation.token}, ${reservation.units.toString()}, ${reservation.recipient},
                'reserved', ${new Date(Date.now() + ttlMs)}, now())`
      return { row, result, reservation }
    }).pipe(sql.withTransaction, Effect.orDie)
    if (verdict.result._tag === "Invalid") return yield* new BadRequest({ message: verdict.result.message })
    if (verdict.result._tag === "Declined") {
      return yield* decline(verdict.row, verdict.result.reason, verdict.result.message, action, verdict.result.resetsAt)
    }
    return verdict.reservation
  })
  const reserve = (signer: Signer, id: string, action: ActionInput) =>
    reserveFor(signer, id, action).pipe(Effect.map((r) => r!))

  const release = (reservationId: string) =>
    sql`UPDATE delegation_reservations SET status = 'released', settled_at = now()
        WHERE id = ${reservationId} AND status IN ('reserved', 'submitted')`.pipe(Effect.orDie, Effect.asVoid)

  const accountByAddress = (address: string) =>
    sql<Parameters<typeof toAccount>[0]>`SELECT * FROM accounts WHERE address = ${lower(address)} AND chain_id = ${network.chainId}`.pipe(
      Effect.orDie,
      Effect.map((rows): Account | undefined => rows[0] === undefined ? undefined : toAccount(rows[0]))
    )

  const act = Effect.fn("Delegations.act")(function*(signer: Signer, id: string, action: ActionInput) {
    // The owner's lane or the delegatee's own: the action is an operation of the delegate's account either way.
    const row = yield* findUsable(signer, id)
    const delegate = yield* accountByAddress(row.delegatee_address)
    if (delegate === undefined) {
      return yield* new BadRequest({
        message: "The delegate is not a smart account known to this service: its key must sign in once so that its account exists"
      })
    }
    // Identical action requests are one action while its build is open (not relayed, not
    // expiring within a minute, its reservation still held): answered the same build again.
    const shareKey = [
      "delegated_action",
      id,
      lower(action.recipient),
      String(action.amount),
      action.token ?? "",
      action.gasToken ?? ""
    ].join(":")
    const open = yield* sql<{ answer: unknown; reservation_id: string }>`
      SELECT b.answer, r.id AS reservation_id FROM op_builds b JOIN delegation_reservations r ON r.id = b.metadata->>'reservationId'
      WHERE b.share_key = ${shareKey} AND b.answer IS NOT NULL AND b.account_id = ${delegate.id}
        AND b.expires_at > now() + interval '1 minute' AND r.status = 'reserved'
      ORDER BY b.created_at DESC LIMIT 1`.pipe(Effect.orDie)
    // Still re-evaluated (expiry, revocation, freeze), counting its one reservation once.
    const reserved = yield* reserveFor(signer, id, action, open[0]?.reservation_id)
    if (open[0] !== undefined) return yield* Schema.decodeUnknownEffect(UserOpBuild)(open[0].answer).pipe(Effect.orDie)
    const reservation = reserved!
    const leg = row.legs[0]!
    const info = tokens.byAddress(network.chainId, reservation.token)!
    const token = { symbol: info.symbol, address: reservation.token, decimals: info.decimals }
    const transfer = { token: token.address, to: reservation.recipient, units: reservation.units }
    const signed = leg.scope === undefined ? leg.delegation : redeemArgs(network.delegation, leg.delegation, leg.scope, transfer)
    if (signed === undefined) {
      yield* release(reservation.id)
      return yield* Effect.die(new Error("an allowed action is outside its grant's on-chain scope"))
    }
    const amount = fromUnits(reservation.units, token.decimals)
    const built = yield* builder.build({
      account: delegate,
      intentType: "delegated_action",
      calls: [redeemCall(dm, signed, transfer)],
      humanSummary: `Send ${amount} ${token.symbol} to ${reservation.recipient} from ${row.delegator_address} under delegation "${row.name}" (signed by the delegate ${row.delegatee_address}).`,
      simulation: { amountOut: { token: { symbol: token.symbol, chainId: row.chain_id, address: token.address }, amount } },
      // What the delegate's own entry shows (the owner's entry reads the chain: OwnerLog.ts).
      metadata: { delegationId: id, reservationId: reservation.id, amount, token: token.symbol, recipient: lower(reservation.recipient) },
      // An identical open action build is answered again, with its one reservation: this request's is freed.
      shareKey,
      ...(action.gasToken === undefined ? {} : { gasToken: action.gasToken })
    }).pipe(Effect.tapError(() => release(reservation.id)))
    if (built.shared) {
      yield* release(reservation.id)
      return built.build
    }
    yield* sql`UPDATE delegation_reservations SET user_op_hash = ${built.build.userOpHash}, op_build_id = ${built.buildId}
               WHERE id = ${reservation.id}`.pipe(Effect.orDie)
    return built.build
  })

  const revoke = Effect.fn("Delegations.revoke")(function*(signer: Signer, id: string) {
    const row = yield* findOwn(signer, id)
    if (row.status === "revoked") return yield* new BadRequest({ message: "This delegation is already revoked" })
    const account = yield* accounts.findById(signer.address, row.account_id)
    const built = yield* builder.build({
      account,
      intentType: "delegation_revoke",
      // From the chain's state of each leg (frozen or not, settled or not): never AlreadyEnabled / AlreadyDisabled.
      callData: revokeCallDataOf(stack, dm, yield* legStates(chain, dm, row.legs)),
      humanSummary: `Revoke delegation "${row.name}" (${row.permission_id}) for good: the delegate ${row.delegatee_address} can no longer act for this account.`,
      riskReducing: true,
      metadata: { delegationId: id }
    })
    return built.build
  })

  // ---------------------------------------------------------------------------------
  // Relay hooks

  const metaString = (build: StoredBuild, key: string) => {
    const v = build.metadata[key]
    return typeof v === "string" ? v : undefined
  }

  /**
   * An executed revoke: the permission ids come from the operation's own call data; only
   * legs whose delegator is the operation's sender can have been disabled by it. A
   * delegation is revoked once every leg is disabled.
   */
  const retire = (callData: Hex, sender: string, txHash: string) =>
    Effect.gen(function*() {
      const ids = disabledPermissionIds(stack, dm, callData).map(lower)
      if (ids.length === 0) return
      const legs = yield* sql<{ delegation_id: string }>`
        UPDATE delegation_legs SET disabled_at = now(), disable_tx_hash = ${txHash}
        WHERE permission_id IN ${sql.in(ids)} AND delegator_address = ${lower(sender)} AND disabled_at IS NULL
        RETURNING delegation_id`
      const touched = [...new Set(legs.map((l) => l.delegation_id))]
      if (touched.length === 0) return
      const revoked = yield* sql<{ id: string }>`
        UPDATE delegations d SET status = 'revoked', revoked_at = now(), revoke_tx_hash = ${txHash}
        WHERE d.id IN ${sql.in(touched)} AND d.status = 'active'
          AND NOT EXISTS (SELECT 1 FROM delegation_legs l WHERE l.delegation_id = d.id AND l.disabled_at IS NULL)
        RETURNING d.id`
      if (revoked.length > 0) {
        yield* sql`UPDATE delegation_reservations SET status = 'released', settled_at = now()
                   WHERE delegation_id IN ${sql.in(revoked.map((r) => r.id))} AND status = 'reserved'`
      }
    }).pipe(Effect.orDie)

  const beforeSubmit = Effect.fn("Delegations.beforeSubmit")(function*(build: StoredBuild, operation: { readonly id: string; readonly userOpHash: string }) {
    const userOpHash = operation.userOpHash
    if (build.intentType !== "delegated_action") return
    const reservationId = metaString(build, "reservationId")
    const delegationId = metaString(build, "delegationId")
    if (reservationId === undefined || delegationId === undefined) return
    const verdict = yield* Effect.gen(function*() {
      const row = (yield* lockDelegation(delegationId))!
      const rs = yield* sql<{ status: string; units: string; token_address: string; recipient: string; retakable: boolean }>`
        SELECT r.status, r.units::text AS units, r.token_address, r.recipient,
               (r.status = 'released' AND r.expires_at > now() AND EXISTS (
                 SELECT 1 FROM user_operations u WHERE u.id = r.operation_id AND u.outcome = 'rejected'
                   AND u.decline_reason IS NULL)) AS retakable
        FROM delegation_reservations r WHERE r.id = ${reservationId} FOR UPDATE OF r`
      const r = rs[0]!
      // Already counted (a re-submission of the same operation): nothing to re-check.
      if (r.status === "submitted" || r.status === "final") return undefined
      const use = yield* usage(row, reservationId)
      const symbol = row.policy_set.budgets.find((b) => lower(b.token.address ?? "") === r.token_address)?.token.symbol
      const result = evaluate(
        row.policy_set,
        decimalsOf,
        { status: row.status, accountFrozen: row.frozen, ...use },
        {
          recipient: r.recipient,
          amount: fromUnits(BigInt(r.units), decimalsOf(r.token_address)),
          ...(symbol === undefined ? {} : { token: symbol })
        },
        new Date()
      )
      // Released (its operation failed or was declined, or the delegation was revoked): never
      // usable again. The delegation's own state (revoked, expired, ...) is the better reason when it has one.
      // Freed by the bundler's refusal of an earlier submission of this build (a bad signature,
      // never on chain): another signature of the same operation may take it again, re-checked here.
      if (r.status === "released" && r.retakable && result._tag === "Allowed") {
        yield* sql`UPDATE delegation_reservations SET status = 'submitted', settled_at = NULL,
                   user_op_hash = ${lower(userOpHash)}, operation_id = ${operation.id} WHERE id = ${reservationId}`
        return undefined
      }
      if (r.status === "released") {
        if (result._tag !== "Allowed") return result
        return {
          _tag: "Declined" as const,
          reason: "reservation_released",
          message: "This action's reservation was released (its operation failed or was declined): build the action again."
        }
      }
      if (result._tag === "Allowed") {
        yield* sql`UPDATE delegation_reservations SET status = 'submitted', user_op_hash = ${lower(userOpHash)},
                   operation_id = ${operation.id} WHERE id = ${reservationId}`
        return undefined
      }
      yield* sql`UPDATE delegation_reservations SET status = 'released', settled_at = now() WHERE id = ${reservationId}`
      return result
    }).pipe(sql.withTransaction, Effect.orDie)
    // The relay records the declined operation in the audit log (with its notification).
    if (verdict !== undefined) {
      return yield* new OutOfScope({
        message: verdict.message,
        declineReason: verdict._tag === "Declined" ? verdict.reason : "invalid_amount"
      })
    }
  })

  // On execution only, inside the relay's settlement transaction.
  yield* hooks.registerPolicyCheck("delegated_action", "delegations.reservation", (op: RelayedOperation) =>
    beforeSubmit(op.build, op))
  yield* hooks.registerOnExecuted("delegation_enable", "delegations.enable", (op, receipt) =>
    settleEnable(op.userOpHash, { status: "executed", transactionHash: receipt.transactionHash, logs: receipt.logs }))
  yield* hooks.registerOnExecuted("delegated_action", "delegations.spend", (op, receipt) => {
    const reservationId = metaString(op.build, "reservationId")
    return reservationId === undefined ? Effect.void : sql`
      UPDATE delegation_reservations SET status = 'final', settled_at = now(), tx_hash = ${receipt.transactionHash}
      WHERE id = ${reservationId} AND status IN ('submitted', 'reserved')`.pipe(Effect.orDie, Effect.asVoid)
  })
  yield* hooks.registerOnExecuted("delegation_revoke", "delegations.revoke", (op, receipt) =>
    retire(op.userOp.callData, op.userOp.sender, receipt.transactionHash))
  // On failure (reverted, rejected, declined), inside the relay's settlement transaction.
  // A failed operation's hash is taken (a re-submission answers its receipt), so its
  // reservation can never be used: free it. Freeing only lowers usage, so it needs no row lock.
  // Only the failure of the very operation bound to the reservation frees it (or, before
  // any was bound, of a submission of its build declined at submit).
  yield* hooks.registerOnFailed("delegated_action", "delegations.release", (op) => {
    const reservationId = metaString(op.build, "reservationId")
    return reservationId === undefined ? Effect.void : sql`
      UPDATE delegation_reservations SET status = 'released', settled_at = now()
      WHERE id = ${reservationId} AND status IN ('reserved', 'submitted')
        AND (operation_id = ${op.id} OR (operation_id IS NULL AND status = 'reserved'))`.pipe(Effect.orDie, Effect.asVoid)
  })
  // An operation on chain (executed or reverted) used its sender's nonce: every other open
  // action build at that (sender, nonce) can never execute, so its reservation is freed now,
  // not at the end of its TTL.
  const nonceUsed = (op: RelayedOperation) =>
    sql`
      UPDATE delegation_reservations r SET status = 'released', settled_at = now()
      FROM op_builds b
      WHERE b.id = r.op_build_id AND r.status = 'reserved' AND b.chain_id = ${op.chainId}
        AND b.sender = ${lower(op.userOp.sender)} AND b.nonce = ${op.userOp.nonce.toString()}
        AND b.id <> ${op.build.id}`.pipe(Effect.orDie, Effect.asVoid)
  yield* hooks.registerOnExecuted("*", "delegations.nonce_used", (op) => nonceUsed(op))
  yield* hooks.registerOnFailed("*", "delegations.nonce_used", (op, failure) =>
    typeof failure === "string" ? Effect.void : nonceUsed(op))
  // A failed enable never becomes a delegation, whether or not anyone is waiting for it.
  yield* hooks.registerOnFailed("delegation_enable", "delegations.enable", (op, failure) =>
    sql`UPDATE delegations SET status = 'failed', failure_reason = ${failureText(failure)}
        WHERE enable_user_op_hash = ${lower(op.userOpHash)} AND status = 'pending'`.pipe(Effect.orDie, Effect.asVoid))

  // Account freeze on chain: the freeze operation disables every live leg of the account's
  // active delegations, the unfreeze re-enables the same set (revoked ones are not active,
  // so they stay disabled). The delegations keep their status; they read `frozen`.
  yield* rules.registerFreezePlan("delegations", (account) =>
    Effect.gen(function*() {
      // Every leg that can be live on chain: active delegations, and pending ones (an enable
      // mined but not yet settled is live); revoked legs are left alone. Which of them to
      // disable (freeze) or re-enable (unfreeze) is read from the chain now (FreezeState.ts).
      const rows = yield* sql<{ legs: ReadonlyArray<Leg> }>`
        SELECT d.legs FROM delegations d WHERE d.account_id = ${account.id} AND d.status IN ('active', 'pending')`.pipe(Effect.orDie)
      const live = yield* sql<{ permission_id: string }>`
        SELECT l.permission_id FROM delegation_legs l JOIN delegations d ON d.id = l.delegation_id
        WHERE d.account_id = ${account.id} AND d.status IN ('active', 'pending') AND l.disabled_at IS NULL`.pipe(Effect.orDie)
      const liveIds = new Set(live.map((l) => lower(l.permission_id)))
      const legs = rows.flatMap((r) => r.legs).filter((l) => liveIds.has(lower(l.permissionId)))
      const states = yield* legStates(chain, dm, legs)
      const calls = freezeCalls(dm, states)
      return {
        ...calls,
        description: legs.length === 0 ? "" : `${rows.length} live delegation(s) (${legs.length} on-chain permission(s))`
      }
    }))

  return Delegations.of({ build, create, list, get, snapshots, reserve, act, revoke, beforeSubmit })
})

const failureText = (failure: BundlerReceipt | string) =>
  typeof failure === "string" ? failure : `reverted: ${failure.reason ?? "the operation's call reverted"}`

const iconOf = (kind: string) => {
  const k = kind.toLowerCase()
  return k === "dapp" ? "dapp" : k === "agent" ? "agent" : k === "bot" ? "bot" : "key"
}
