/**
 * Delegated actions and their settlement: evaluate and reserve under the delegation's row
 * lock, build the delegate's redeem operation, re-check the reservation when the relay
 * submits it (`beforeSubmit`), and the relay hooks that settle reservations, enables and
 * revokes. Rules: docs/delegations.md ("Spend accounting"). SQL: DelegationRepo.ts.
 */
import { requesterWords } from "../domain/OutsideText.ts"
import { Config, Data, Duration, Effect } from "effect"
import { type Address, encodeFunctionData, erc20Abi, type Hex } from "viem"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, OutOfScope, ServiceUnavailable } from "../api/Errors.ts"
import { OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { type ApprovalSet, decodeApprovalTerms, needsApproval } from "../chain/Approvals.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { makeSingleFlight } from "../platform/SingleFlight.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { periodUse } from "./ApprovalPeriod.ts"
import { redeemCall } from "./Caveats.ts"
import { DelegationRepo, type DelegationRow } from "./DelegationRepo.ts"
import { type Enable, failureText } from "./Enable.ts"
import { redeemArgs } from "./Grant.ts"
import { isNative, nativeToken } from "../tokens/Native.ts"
import { type ActionInput, evaluate, fromUnits } from "./Policy.ts"
import { ApprovalGate, DeclineRecorder, type RelayedOperation, RelayHooks } from "./Ports.ts"
import { lower, type Reads, type Signer } from "./Reads.ts"
import type { RevokeFreeze } from "./RevokeFreeze.ts"

export interface Reservation {
  readonly id: string
  readonly delegationId: string
  readonly units: bigint
  readonly token: Address
  readonly recipient: Address
  /** The allowlist's name of the recipient, when the action named it. */
  readonly recipientName?: string
}

/** An approved action's build (issue 25): its approvals attached, on the request's reservation (or a new one). */
export interface ApprovedAction {
  readonly requestId: string
  readonly reservationId: string
  readonly token: Address
  readonly units: bigint
  readonly recipient: Address
  readonly gasToken?: "USDC" | "USDT"
  readonly approvals: ApprovalSet
  /** Unix seconds: a new reservation is held until then. */
  readonly deadline: Date
}

/** How long an action build holds its reservation if it is never relayed. */
export const ReservationTtl = Config.Duration("DELEGATION_RESERVATION_TTL").pipe(Config.withDefault(Duration.minutes(10)))

const metaString = (build: StoredBuild, key: string) => {
  const v = build.metadata[key]
  return typeof v === "string" ? v : undefined
}

/** A reservation refused under the grant's row lock in its build's transaction (`buildFolded`): the build rolls back. */
class ReservationRefused extends Data.TaggedError("ReservationRefused")<{
  readonly row: DelegationRow
  readonly verdict: Exclude<ReturnType<typeof evaluate>, { readonly _tag: "Allowed" }>
}> {}

export const makeActions = (reads: Reads) => Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const tokens = yield* TokenRegistry
  const builder = yield* OperationBuilder
  const chains = yield* Chains
  const declines = yield* DeclineRecorder
  const gate = yield* ApprovalGate
  const reservationTtl = yield* ReservationTtl
  const { decimalsOf, usageOf, findUsable } = reads
  const actOnce = makeSingleFlight()

  // ---------------------------------------------------------------------------------
  // Actions: evaluate + reserve under the row lock

  // What a grant has used (`Usage.lockedStateOf`, under its row lock): executed, submitted and
  // unexpired reserved actions (but the one re-evaluated), reconciled with the enforcers' state on
  // chain. A submitted reservation counts until the relay settles its operation: `final`
  // (on-executed hook) or `released` (on-failed hook), both in the settlement's own transaction.

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
   * action is still allowed (evaluated as if that reservation were this request's). `found`: the
   * grant as the caller found it usable by the signer in this request (no second read). The
   * enforcers' state is read first, so the grant's row lock is never held across a chain call;
   * under the lock its status, frozen flag and ledger are one round trip (`Usage.lockedStateOf`).
   */
  const reserveFor = Effect.fn("Delegations.reserve")(function*(signer: Signer, id: string, action: ActionInput, open?: string, found?: DelegationRow) {
    const usable = found ?? (yield* findUsable(signer, id))
    const ttlMs = Duration.toMillis(reservationTtl)
    const fromChain = yield* usageOf.onChain(usable, new Date())
    const verdict = yield* Effect.gen(function*() {
      const { row, state: use } = (yield* usageOf.lockedStateOf(usable, fromChain, open))!
      const result = evaluate(row.policy_set, decimalsOf, { status: row.status, accountFrozen: row.frozen, ...use }, action, new Date())
      if (result._tag !== "Allowed") return { row, result, reservation: undefined }
      if (open !== undefined) return { row, result, reservation: undefined }
      const reservation: Reservation = {
        id: `rsv_${crypto.randomUUID()}`,
        delegationId: id,
        units: result.units,
        token: result.token.address as Address,
        recipient: result.recipient as Address,
        ...(result.recipientName === undefined ? {} : { recipientName: result.recipientName })
      }
      yield* repo.insertReservation({
        id: reservation.id,
        delegationId: id,
        token: reservation.token,
        units: reservation.units,
        recipient: reservation.recipient,
        expiresAt: new Date(Date.now() + ttlMs)
      })
      return { row, result, reservation }
    }).pipe(repo.withTransaction, Effect.orDie)
    if (verdict.result._tag === "Invalid") return yield* new BadRequest({ message: verdict.result.message })
    if (verdict.result._tag === "Declined") {
      return yield* decline(verdict.row, verdict.result.reason, verdict.result.message, action, verdict.result.resetsAt)
    }
    return verdict.reservation
  })
  const reserve = (signer: Signer, id: string, action: ActionInput) =>
    reserveFor(signer, id, action).pipe(Effect.map((r) => r!))

  const release = (reservationId: string) => repo.releaseReservation(reservationId)

  const accountByAddress = (address: string, chainId: number) => repo.accountByAddress(lower(address), chainId)

  /** The action's build, or its approval request when the grant's approval rule holds it back. */
  const request = Effect.fn("Delegations.request")(function*(signer: Signer, id: string, action: ActionInput) {
    // The owner's lane or the delegatee's own: the action is an operation of the delegate's account either way.
    const row = yield* findUsable(signer, id)
    const delegate = yield* accountByAddress(row.delegatee_address, row.chain_id)
    if (delegate === undefined) {
      return yield* new BadRequest({
        message: lower(row.delegatee_address) === lower(signer.address)
          // The signer's own key is the delegate (an EOA): it redeems with its own transaction.
          ? "The delegate is a plain address (an EOA): it redeems the grant with its own transaction " +
            "(DelegationManager.redeemDelegations with the grant's permission context, e.g. the kit's sendTransactionWithDelegation); " +
            "this endpoint builds user operations of smart-account delegates"
          : "The delegate is not a smart account known to this service: its key must sign in once so that its account exists"
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
    // Identical requests at once in this process are one run: the others wait for its answer
    // (each was authorized above). Otherwise each would hold a reservation until the builds
    // meet on their share key, and near the budget the last ones would be declined for it.
    return yield* actOnce(`${delegate.id}|${shareKey}`, buildAction(signer, id, action, row, delegate, shareKey))
  })

  /** The action's build; an action the grant's approval rule holds back is refused (its request is opened: it is listed). */
  const act = Effect.fn("Delegations.act")(function*(signer: Signer, id: string, action: ActionInput) {
    const answer = yield* request(signer, id, action)
    if ("userOp" in answer) return answer
    return yield* new BadRequest({
      message: `This action needs ${answer.required} approvals: it is approval request ${answer.id} (POST /delegations/{id}/actions answers it with 202)`
    })
  })

  /** The grant's approval rule as its ApprovalEnforcer caveat holds it (the chain's terms), when it has one. */
  const heldBy = (net: ChainNetwork, row: DelegationRow) => {
    const enforcer = net.network.delegation.caveatEnforcers["ApprovalEnforcer"]
    const caveat = enforcer === undefined ? undefined : row.legs[0]?.delegation.caveats.find((c) => lower(c.enforcer) === lower(enforcer))
    const rule = caveat === undefined ? undefined : decodeApprovalTerms(caveat.terms as Hex)
    return rule === undefined ? undefined : { rule, enforcer: enforcer! }
  }

  const tokenOf = (chainId: number, address: Address) => {
    const info = isNative(address) ? nativeToken(chainId) : tokens.byAddress(chainId, address)!
    return { symbol: info.symbol, address, decimals: info.decimals }
  }

  const buildAction = Effect.fnUntraced(function*(
    signer: Signer,
    id: string,
    action: ActionInput,
    row: DelegationRow,
    delegate: Account,
    shareKey: string
  ) {
    const net = yield* chains.serving(row.chain_id)
    const held = heldBy(net, row)
    // An identical action already waiting for its approvals is that request.
    if (held !== undefined) {
      const waiting = yield* gate.pending(id, shareKey)
      if (waiting !== undefined) return waiting
    }
    const open = yield* repo.findOpenAction(shareKey, delegate.id)
    // A new action without an approval rule: reserved in its build's own transaction.
    if (open === undefined && held === undefined) return yield* buildFolded(net, row, delegate, action, shareKey)
    // Still re-evaluated (expiry, revocation, freeze), counting its one reservation once.
    const reserved = yield* reserveFor(signer, id, action, open?.reservation_id, row)
    if (open !== undefined) return open.answer
    const reservation = reserved!
    const token = tokenOf(row.chain_id, reservation.token)
    // The execution the redemption carries (Caveats.redeemCall): what the enforcer gates and the approvers sign.
    const execution = isNative(reservation.token)
      ? { target: reservation.recipient, value: reservation.units, callData: "0x" as Hex }
      : {
        target: token.address,
        value: 0n,
        callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [reservation.recipient, reservation.units] })
      }
    const callData = execution.callData
    // Above the rule's threshold the chain refuses it without approvals: it becomes an approval
    // request (the reservation held until its deadline) instead of a build. Per period (issue 44),
    // with what moved (and may still move) without approvals in the period counted in.
    const period = held === undefined
      ? undefined
      : yield* periodUse(repo, net, {
        rule: held.rule,
        enforcer: held.enforcer,
        delegationId: id,
        permissionId: row.permission_id,
        reservationId: reservation.id,
        execution
      }).pipe(
        Effect.tapError(() => release(reservation.id)),
        Effect.catchTag("ChainUnavailable", (e) =>
          Effect.fail(new ServiceUnavailable({ message: `The chain did not answer (${e.message}): what moved without approvals in this period cannot be read, try again` })))
      )
    if (held !== undefined && needsApproval(held.rule, execution, period)) {
      return yield* gate.open({
        requester: lower(signer.address),
        delegation: {
          id,
          accountId: row.account_id,
          signerAddress: row.signer_address,
          chainId: row.chain_id,
          permissionId: row.permission_id,
          delegator: row.delegator_address,
          delegate: row.delegatee_address,
          name: row.name,
          expiresAt: row.policy_set.expiresAt
        },
        reservationId: reservation.id,
        token,
        units: reservation.units,
        recipient: reservation.recipient,
        ...(reservation.recipientName === undefined ? {} : { recipientName: reservation.recipientName }),
        ...(action.gasToken === undefined ? {} : { gasToken: action.gasToken }),
        shareKey,
        rule: held.rule,
        ...(period === undefined ? {} : { unapprovedInPeriod: period.unapproved }),
        enforcer: held.enforcer,
        delegationManager: net.network.delegation.DelegationManager,
        callData,
        hold: (until) => repo.holdReservation(reservation.id, until),
        release: release(reservation.id)
      }).pipe(Effect.tapError(() => release(reservation.id)))
    }
    return yield* buildHeld(net, row, delegate, reservation, { shareKey, gasToken: action.gasToken })
  })

  /**
   * A new action without an approval rule, one commit: evaluated first without a lock (declined
   * at once when it is), then built, and reserved in the build's own transaction under the
   * grant's row lock, evaluated again there against the ledger as it is then. The ledger is read
   * by a statement after the lock's (both in one function call, `delegation_lock_ledger`), so in
   * READ COMMITTED its snapshot holds every reservation committed before the lock was granted
   * (one statement that locks and reads would not: docs/decisions.md). The enforcers' state is
   * the one read before (it is the chain's, which no row lock holds still, as before). Refused there (another action took the room meanwhile, the
   * grant was revoked or frozen): the build is rolled back, nothing is counted, and the action
   * is declined. A process that dies before the commit leaves no reservation behind.
   */
  const buildFolded = Effect.fnUntraced(function*(
    net: ChainNetwork,
    row: DelegationRow,
    delegate: Account,
    action: ActionInput,
    shareKey: string
  ) {
    // The enforcers' state, read once (beside the first ledger read) for both evaluations.
    const read = yield* Effect.cached(usageOf.onChain(row, new Date()))
    const first = evaluate(row.policy_set, decimalsOf, { status: row.status, accountFrozen: row.frozen, ...yield* usageOf.stateOf(row, undefined, read) }, action, new Date())
    if (first._tag === "Invalid") return yield* new BadRequest({ message: first.message })
    if (first._tag === "Declined") return yield* decline(row, first.reason, first.message, action, first.resetsAt)
    const reservation: Reservation = {
      id: `rsv_${crypto.randomUUID()}`,
      delegationId: row.id,
      units: first.units,
      token: first.token.address as Address,
      recipient: first.recipient as Address,
      ...(first.recipientName === undefined ? {} : { recipientName: first.recipientName })
    }
    const reserveWithBuild = (stored: { readonly buildId: string; readonly userOpHash: string }) =>
      Effect.gen(function*() {
        // The row lock, the grant's status and frozen flag, its ledger and the reservation's
        // insert: one statement. A refusal below fails the build's transaction: rolled back, the
        // reservation with it, so what is kept was checked against the ledger under the lock.
        const { row: locked, state: use } = (yield* usageOf.lockedStateOf(row, yield* read, undefined, {
          id: reservation.id,
          delegationId: row.id,
          token: reservation.token,
          units: reservation.units,
          recipient: reservation.recipient,
          expiresAt: new Date(Date.now() + Duration.toMillis(reservationTtl)),
          build: { userOpHash: stored.userOpHash, opBuildId: stored.buildId }
        }))!
        const result = evaluate(locked.policy_set, decimalsOf, { status: locked.status, accountFrozen: locked.frozen, ...use }, action, new Date())
        if (result._tag !== "Allowed") return yield* new ReservationRefused({ row: locked, verdict: result })
        // The policy is immutable and the action the same: the same transfer as built.
        if (result.units !== reservation.units || lower(result.token.address!) !== lower(reservation.token)) {
          return yield* Effect.die(new Error("an action evaluated twice in one request gave two transfers"))
        }
      })
    return yield* buildReserved(net, row, delegate, reservation, { shareKey, gasToken: action.gasToken, reserveWithBuild }).pipe(
      Effect.catchTag("ReservationRefused", ({ row: locked, verdict }): Effect.Effect<never, BadRequest | OutOfScope> =>
        verdict._tag === "Invalid"
          ? Effect.fail(new BadRequest({ message: verdict.message }))
          : decline(locked, verdict.reason, verdict.message, action, verdict.resetsAt))
    )
  })

  /** The delegate's redeem operation for a reserved action (with its approvals, when the rule asked for them). */
  const buildReserved = Effect.fnUntraced(function*(
    net: ChainNetwork,
    row: DelegationRow,
    delegate: Account,
    reservation: Reservation,
    options: {
      readonly shareKey: string
      readonly gasToken?: "USDC" | "USDT" | undefined
      readonly approvals?: ApprovalSet
      readonly requestId?: string
      /** Takes the reservation in the build's transaction (`buildFolded`); otherwise it is held already and bound there. */
      readonly reserveWithBuild?: (stored: { readonly buildId: string; readonly userOpHash: string }) => Effect.Effect<void, ReservationRefused>
    }
  ) {
    // A reservation held before the build is freed when the build fails or is shared; one taken with the build never was.
    const heldBefore = options.approvals === undefined && options.reserveWithBuild === undefined
    const id = row.id
    const leg = row.legs[0]!
    const { network } = net
    const token = tokenOf(row.chain_id, reservation.token)
    const transfer = { token: token.address, to: reservation.recipient, units: reservation.units }
    const signed = leg.scope === undefined
      ? leg.delegation
      : redeemArgs(network.delegation, leg.delegation, leg.scope, { ...transfer, ...(options.approvals === undefined ? {} : { approvals: options.approvals }) })
    if (signed === undefined) {
      if (options.reserveWithBuild === undefined) yield* release(reservation.id)
      return yield* Effect.die(new Error("an allowed action is outside its grant's on-chain scope"))
    }
    const amount = fromUnits(reservation.units, token.decimals)
    const approved = options.approvals === undefined ? "" : ` It carries the ${options.approvals.approvals.length} approvals it needs.`
    const built = yield* builder.build({
      account: delegate,
      intentType: "delegated_action",
      calls: [redeemCall(network.delegation.DelegationManager, signed, transfer)],
      humanSummary: `Send ${amount} ${token.symbol} to ${reservation.recipient} from ${row.delegator_address} under delegation ${row.permission_id} ` +
        `(signed by the delegate ${row.delegatee_address}).${approved}${requesterWords("Delegation named by the requester", row.name)}`,
      simulation: { amountOut: { token: { symbol: token.symbol, chainId: row.chain_id, address: token.address }, amount } },
      // What the delegate's own entry shows (the owner's entry reads the chain: OwnerLog.ts).
      metadata: {
        delegationId: id,
        reservationId: reservation.id,
        amount,
        token: token.symbol,
        recipient: lower(reservation.recipient),
        ...(options.requestId === undefined ? {} : { approvalRequestId: options.requestId })
      },
      // An identical open action build is answered again, with its one reservation: this request's is freed.
      shareKey: options.shareKey,
      // Taken, or bound to its build, in the build's own transaction (one commit, not two).
      onStored: options.reserveWithBuild ?? ((stored) => repo.bindReservation(reservation.id, stored.userOpHash, stored.buildId)),
      ...(options.gasToken === undefined ? {} : { gasToken: options.gasToken })
    }).pipe(Effect.tapError(() => heldBefore ? release(reservation.id) : Effect.void))
    if (built.shared && heldBefore) yield* release(reservation.id)
    return built.build
  })

  /** `buildReserved` on a reservation held before the build: only bound to it there, never refused. */
  const buildHeld = (...args: Parameters<typeof buildReserved>) =>
    buildReserved(...args).pipe(Effect.catchTag("ReservationRefused", (refused) => Effect.die(refused)))

  /**
   * An approved action's build, the approvals attached (issue 25). On the request's reservation
   * while it is held; a reservation it no longer holds (its operation failed, or it lapsed) is
   * taken again through the same checks (the budget may be gone). The grant is re-evaluated
   * either way (revoked, expired, frozen).
   */
  const buildApproved = Effect.fn("Delegations.buildApproved")(function*(signer: Signer, id: string, approved: ApprovedAction) {
    const row = yield* findUsable(signer, id)
    const delegate = yield* accountByAddress(row.delegatee_address, row.chain_id)
    if (delegate === undefined) return yield* new BadRequest({ message: "The delegate is not a smart account known to this service" })
    const net = yield* chains.serving(row.chain_id)
    const token = tokenOf(row.chain_id, approved.token)
    const action: ActionInput = {
      recipient: approved.recipient,
      amount: fromUnits(approved.units, token.decimals),
      token: token.symbol,
      ...(approved.gasToken === undefined ? {} : { gasToken: approved.gasToken })
    }
    const shareKey = `approval:${approved.requestId}`
    const state = yield* repo.findReservation(approved.reservationId)
    if (state?.status === "submitted" || state?.status === "final") {
      const open = yield* repo.findOpenAction(shareKey, delegate.id)
      if (open !== undefined) return { build: open.answer, reservationId: approved.reservationId }
      return yield* new BadRequest({ message: "An operation of this approved action was already relayed: follow it with GET /userops/{id}" })
    }
    const keep = state !== undefined && state.held
    const open = keep ? yield* repo.findOpenAction(shareKey, delegate.id) : undefined
    const reserved = yield* reserveFor(signer, id, action, keep ? approved.reservationId : undefined, row)
    if (open !== undefined) return { build: open.answer, reservationId: approved.reservationId }
    const reservation: Reservation = reserved ?? {
      id: approved.reservationId,
      delegationId: id,
      units: approved.units,
      token: approved.token,
      recipient: approved.recipient
    }
    if (reserved !== undefined) yield* repo.holdReservation(reserved.id, approved.deadline)
    const build = yield* buildHeld(net, row, delegate, reservation, {
      shareKey,
      gasToken: approved.gasToken,
      approvals: approved.approvals,
      requestId: approved.requestId
    })
    return { build, reservationId: reservation.id }
  })

  /** Releases a reservation an approval request held (denied or expired), unless an operation of it is in flight. */
  const releaseHeld = (reservationId: string) => repo.releaseReserved(reservationId)
  const reservationState = (reservationId: string) => repo.findReservation(reservationId)

  /**
   * The relay's submit-time re-check of a delegated action (a staged policy check,
   * `RelayHooks.StagedPolicyCheck`). Now, before the relay's transaction: the grant as stored
   * (its policy and legs never change; its status and frozen flag are read again under the lock)
   * and the enforcers' state, so no lock waits on the chain. What it answers runs in the relay's
   * transaction: the action evaluated again under the grant's row lock, its reservation taken
   * for the operation (or released, and the operation declined).
   */
  const beforeSubmit = Effect.fn("Delegations.beforeSubmit")(function*(build: StoredBuild, operation: { readonly id: string; readonly userOpHash: string }) {
    const userOpHash = operation.userOpHash
    if (build.intentType !== "delegated_action") return Effect.void
    const reservationId = metaString(build, "reservationId")
    const delegationId = metaString(build, "delegationId")
    if (reservationId === undefined || delegationId === undefined) return Effect.void
    const known = yield* repo.findById(delegationId)
    if (known === undefined) return yield* Effect.die(new Error(`the build's delegation ${delegationId} does not exist`))
    const fromChain = yield* usageOf.onChain(known, new Date())
    return Effect.gen(function*() {
      const verdict = yield* Effect.gen(function*() {
        const { row, state: use } = (yield* usageOf.lockedStateOf(known, fromChain, reservationId))!
        const r = (yield* repo.lockReservation(reservationId))!
        // Already counted (a re-submission of the same operation): nothing to re-check.
        if (r.status === "submitted" || r.status === "final") return undefined
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
          yield* repo.submitReservation(reservationId, lower(userOpHash), operation.id, true)
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
          yield* repo.submitReservation(reservationId, lower(userOpHash), operation.id, false)
          return undefined
        }
        yield* repo.releaseReservationNow(reservationId)
        return result
      }).pipe(repo.withTransaction, Effect.orDie)
      // The relay records the declined operation in the audit log (with its notification).
      if (verdict !== undefined) {
        return yield* new OutOfScope({
          message: verdict.message,
          declineReason: verdict._tag === "Declined" ? verdict.reason : "invalid_amount"
        })
      }
    })
  })

  return { reserve, act, request, beforeSubmit, buildApproved, releaseHeld, reservationState }
})

export type Actions = Effect.Success<ReturnType<typeof makeActions>>

/**
 * The relay hooks of the feature, registered in this order: the submit-time re-check of a
 * delegated action, and the settlement of enables, actions and revokes (on execution or
 * failure, inside the relay's settlement transaction).
 */
export const registerSettlement = (
  actions: Pick<Actions, "beforeSubmit">,
  enable: Pick<Enable, "settleEnable">,
  revokeFreeze: Pick<RevokeFreeze, "retire">
) => Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const hooks = yield* RelayHooks
  const { beforeSubmit } = actions
  const { settleEnable } = enable
  const { retire } = revokeFreeze

  // On execution only, inside the relay's settlement transaction.
  yield* hooks.registerStagedPolicyCheck("delegated_action", "delegations.reservation", (op: RelayedOperation) =>
    beforeSubmit(op.build, op))
  yield* hooks.registerOnExecuted("delegation_enable", "delegations.enable", (op, receipt) =>
    settleEnable(op.userOpHash, { status: "executed", transactionHash: receipt.transactionHash, logs: receipt.logs }))
  yield* hooks.registerOnExecuted("delegated_action", "delegations.spend", (op, receipt) => {
    const reservationId = metaString(op.build, "reservationId")
    return reservationId === undefined ? Effect.void : repo.finalizeReservation(reservationId, receipt.transactionHash)
  })
  yield* hooks.registerOnExecuted("delegation_revoke", "delegations.revoke", (op, receipt) =>
    retire(op.chainId, op.userOp.callData, op.userOp.sender, receipt.transactionHash))
  // On failure (reverted, rejected, declined), inside the relay's settlement transaction.
  // A failed operation's hash is taken (a re-submission answers its receipt), so its
  // reservation can never be used: free it. Freeing only lowers usage, so it needs no row lock.
  // Only the failure of the very operation bound to the reservation frees it (or, before
  // any was bound, of a submission of its build declined at submit).
  yield* hooks.registerOnFailed("delegated_action", "delegations.release", (op) => {
    const reservationId = metaString(op.build, "reservationId")
    return reservationId === undefined ? Effect.void : repo.releaseForFailedOperation(reservationId, op.id)
  })
  // An operation on chain (executed or reverted) used its sender's nonce: every other open
  // action build at that (sender, nonce) can never execute, so its reservation is freed now,
  // not at the end of its TTL.
  const nonceUsed = (op: RelayedOperation) =>
    repo.releaseSameNonce({
      chainId: op.chainId,
      sender: lower(op.userOp.sender),
      nonce: op.userOp.nonce.toString(),
      exceptBuildId: op.build.id
    })
  yield* hooks.registerOnExecuted("*", "delegations.nonce_used", (op) => nonceUsed(op))
  yield* hooks.registerOnFailed("*", "delegations.nonce_used", (op, failure) =>
    typeof failure === "string" ? Effect.void : nonceUsed(op))
  // A failed enable never becomes a delegation, whether or not anyone is waiting for it.
  yield* hooks.registerOnFailed("delegation_enable", "delegations.enable", (op, failure) =>
    repo.failPendingByEnableHash(lower(op.userOpHash), failureText(failure)))
})
