/**
 * Approval requests (issue 25; docs/approvals.md): an action above its grant's approval threshold
 * becomes a pending request (not a build); its owner and approvers are told (feed, SSE stream,
 * signed webhooks: every notification travels all three); each approver signs the
 * ApprovalEnforcer's EIP-712 `Approval` of the exact execution; at `required` approvals the request
 * is `approved` and the agent fetches its build (the approvals as the caveat's args), signs and
 * relays it; the chain spends the nonce once (`executed`). A denial, or the deadline, settles it
 * and frees its reservation.
 *
 * Exactly once: every status change runs on the request's locked row with a conditional UPDATE
 * (two approvals at once count both, an approval and a denial at once settle one after the
 * other, anything after the deadline settles it `expired`); the chain refuses a second execution
 * of the same approvals (`ApprovalEnforcer:nonce-used`) whatever the service does.
 */
import { requesterWords } from "../domain/OutsideText.ts"
import { Config, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, encodeFunctionData, type Hex } from "viem"
import { BadRequest, Conflict, NotFound } from "../api/Errors.ts"
import { AuditChain, type AuditStatus } from "../audit/AuditChain.ts"
import { AuditLive } from "../audit/Recorder.ts"
import { approvalDigest, approvalTypedData, type Execution, isValidApproverSignature, randomApprovalNonce } from "../chain/Approvals.ts"
import { Chains } from "../chain/Chains.ts"
import { approvalEnforcerAbi } from "../chain/contracts/Approvals.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import { makeAgentControl } from "../delegations/AgentControl.ts"
import { Delegations } from "../delegations/Delegations.ts"
import { isNative } from "../tokens/Native.ts"
import { fromUnits } from "../delegations/Policy.ts"
import { ApprovalGate, type HeldAction, RelayHooks } from "../delegations/Ports.ts"
import { thresholdWords } from "./ThresholdWords.ts"
import type { Signer } from "../delegations/Reads.ts"
import type { ApprovalRequest } from "../domain/Approvals.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import { Notifications, type Tone } from "../notifications/Notifications.ts"
import { ApprovalRepo, type ApprovalRow, type SignatureRow } from "./ApprovalRepo.ts"
import { ApproverContacts } from "./Contacts.ts"

/** How long a request waits for its approvals (and its approvals stay good on chain); never past the grant's expiry. */
export const ApprovalTtl = Config.Duration("APPROVALS_TTL").pipe(Config.withDefault(Duration.hours(24)))
/** How often requests past their deadline are settled (they are also settled whenever one is touched). */
export const ApprovalSweep = Config.Duration("APPROVALS_SWEEP_INTERVAL").pipe(Config.withDefault(Duration.seconds(15)))

/** A build asked this close to the deadline would likely reach the chain after it: refused. */
const BUILD_MARGIN_MS = 60_000

const lower = (s: string) => s.toLowerCase()

export const executionOf = (row: Pick<ApprovalRow, "token_address" | "recipient" | "units" | "call_data">): Execution =>
  isNative(row.token_address)
    ? { target: row.recipient as Address, value: BigInt(row.units), callData: "0x" }
    : { target: row.token_address as Address, value: 0n, callData: row.call_data as Hex }

const signable = (row: ApprovalRow) => ({
  chainId: row.chain_id,
  enforcer: row.enforcer as Address,
  delegationHash: row.permission_id as Hex,
  execution: executionOf(row),
  nonce: BigInt(row.nonce),
  deadline: BigInt(Math.floor(row.deadline.getTime() / 1000))
})

export const toWire = (row: ApprovalRow, signatures: ReadonlyArray<SignatureRow>, chain: string): ApprovalRequest => {
  const td = approvalTypedData(signable(row))
  return {
    id: row.id,
    status: row.status,
    summary: row.summary,
    delegationId: row.delegation_id,
    permissionId: row.permission_id,
    chain,
    chainId: row.chain_id,
    agent: row.delegate_address,
    account: row.delegator_address,
    token: { symbol: row.token_symbol, chainId: row.chain_id, address: row.token_address },
    amount: fromUnits(BigInt(row.units), row.token_decimals),
    units: row.units,
    recipient: row.recipient,
    ...(row.recipient_name === null ? {} : { recipientName: row.recipient_name }),
    required: row.required,
    approvers: row.approvers,
    approvals: signatures.map((s) => ({ approver: s.approver, at: s.created_at.toISOString() })),
    deadline: row.deadline.toISOString(),
    createdAt: row.created_at.toISOString(),
    ...(row.approved_at === null ? {} : { approvedAt: row.approved_at.toISOString() }),
    ...(row.denied_at === null ? {} : { denial: { by: row.denied_by ?? "", reason: row.deny_reason ?? "", at: row.denied_at.toISOString() } }),
    ...(row.expired_at === null
      ? {}
      : { expiry: { reason: row.expired_reason === "grant_revoked" ? "grant_revoked" : "deadline", at: row.expired_at.toISOString() } }),
    ...(row.executed_at === null
      ? {}
      : {
        execution: {
          at: row.executed_at.toISOString(),
          ...(row.tx_hash === null ? {} : { txHash: row.tx_hash }),
          ...(row.operation_id === null ? {} : { userOpId: row.operation_id })
        }
      }),
    built: row.built_at !== null,
    toSign: {
      domain: td.domain,
      types: { Approval: td.types.Approval.map((f) => ({ name: f.name, type: f.type })) },
      primaryType: "Approval",
      message: {
        delegationHash: td.message.delegationHash,
        target: td.message.target,
        value: td.message.value.toString(),
        callData: td.message.callData,
        nonce: td.message.nonce.toString(),
        deadline: td.message.deadline.toString()
      }
    },
    link: `approvals/${row.id}`
  }
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const transaction = transactionRetryingConflicts(sql)
  const repo = yield* ApprovalRepo
  const chains = yield* Chains
  const audit = yield* AuditChain
  const notifications = yield* Notifications
  const delegations = yield* Delegations
  const gate = yield* ApprovalGate
  const hooks = yield* RelayHooks
  const contacts = yield* ApproverContacts
  const ttl = yield* ApprovalTtl
  const agentControl = yield* makeAgentControl

  const render = (row: ApprovalRow) =>
    Effect.map(repo.signatures(row.id), (sigs) => toWire(row, sigs, chains.nameOf(row.chain_id)))

  /** One entry on the owner's log for one step (its id: the request's and the step's, so a step is logged once). */
  const log = (row: ApprovalRow, step: string, status: AuditStatus, actor: string, extra?: { readonly reason?: string; readonly txHash?: string }) =>
    audit.append({
      accountId: row.account_id,
      declineId: `${row.id}:${step}`,
      actor,
      action: step === "signed" || step.startsWith("signed:") ? "approval_signature" : "approval_request",
      amount: fromUnits(BigInt(row.units), row.token_decimals),
      token: row.token_symbol,
      chain: chains.nameOf(row.chain_id),
      chainId: row.chain_id,
      status,
      delegationId: row.delegation_id,
      recipient: row.recipient,
      ...(extra?.reason === undefined ? {} : { declineReason: extra.reason }),
      ...(extra?.txHash === undefined ? {} : { txHash: extra.txHash, provenance: "onchain" as const })
    }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))

  /** Everyone concerned (owner, approvers; the agent too when `withAgent`), each told once, with the deep link. */
  const tell = (row: ApprovalRow, tone: Tone, title: string, body: string, withAgent: boolean) =>
    Effect.gen(function*() {
      const behind = yield* repo.signersOf([...row.approvers, ...(withAgent ? [row.delegate_address] : [])])
      // Approvers who do not sign in here: the webhooks their owner registered for them (Contacts.ts).
      const reachable = yield* contacts.reachable(row.owner_signer, row.approvers)
      const who = new Set([row.owner_signer, ...behind, ...reachable, ...(withAgent ? [row.requested_by] : [])])
      yield* Effect.forEach(who, (signer) =>
        notifications.notify(signer as Address, {
          tone,
          title,
          body,
          relatedType: "approval_request",
          relatedId: row.id,
          action: { label: "Review request", target: `approvals/${row.id}` }
        }), { discard: true })
    })

  const amountText = (row: ApprovalRow) => `${fromUnits(BigInt(row.units), row.token_decimals)} ${row.token_symbol}`

  // --- opening (through the delegations feature's ApprovalGate) -----------------------------

  const open = (held: HeldAction) =>
    transaction(Effect.gen(function*() {
      const now = Date.now()
      const deadline = new Date(Math.min(now + Duration.toMillis(ttl), Date.parse(held.delegation.expiresAt)))
      deadline.setMilliseconds(0)
      const amount = fromUnits(held.units, held.token.decimals)
      const to = held.recipient
      const row = {
        id: `apr_${crypto.randomUUID()}`,
        delegation_id: held.delegation.id,
        account_id: held.delegation.accountId,
        owner_signer: lower(held.delegation.signerAddress),
        chain_id: held.delegation.chainId,
        permission_id: held.delegation.permissionId,
        delegator_address: lower(held.delegation.delegator),
        delegate_address: lower(held.delegation.delegate),
        requested_by: lower(held.requester),
        reservation_id: held.reservationId,
        share_key: held.shareKey,
        token_address: lower(held.token.address),
        token_symbol: held.token.symbol,
        token_decimals: held.token.decimals,
        units: held.units.toString(),
        recipient: lower(held.recipient),
        recipient_name: held.recipientName ?? null,
        gas_token: held.gasToken ?? null,
        call_data: held.callData,
        enforcer: lower(held.enforcer),
        delegation_manager: lower(held.delegationManager),
        required: held.rule.required,
        approvers: held.rule.approvers.map(lower),
        nonce: randomApprovalNonce().toString(),
        deadline,
        summary: `The agent ${held.delegation.delegate} asks to send ${amount} ${held.token.symbol} to ${to} from ${held.delegation.delegator} ` +
          `under delegation ${held.delegation.permissionId}: ${thresholdWords(held.rule, held.token, held.unapprovedInPeriod)}, it needs ${held.rule.required} of ` +
          `${held.rule.approvers.length} approvals by ${deadline.toISOString()}.` +
          // Names are the requester's words: after the figures, quoted (src/domain/OutsideText.ts).
          requesterWords("Delegation named by the requester", held.delegation.name) +
          (held.recipientName === undefined ? "" : requesterWords(`Recipient ${held.recipient} named by the requester`, held.recipientName))
      }
      const inserted = yield* repo.insert(row)
      if (!inserted) {
        // An identical action opened its request first: this is that request; its reservation suffices.
        yield* held.release
        const existing = yield* repo.findPending(held.shareKey)
        if (existing === undefined) return yield* Effect.die(new Error("an approval request lost its share key and is gone"))
        return yield* render(existing)
      }
      yield* held.hold(deadline)
      const stored = (yield* repo.find(row.id))!
      yield* log(stored, "requested", "pending", stored.requested_by)
      yield* tell(stored, "warning", "Approval needed", stored.summary, false)
      return yield* render(stored)
    })).pipe(Effect.orDie)

  const pending = (_delegationId: string, shareKey: string) =>
    Effect.flatMap(repo.findPending(shareKey), (row) => row === undefined ? Effect.succeed(undefined) : render(row))

  // --- settling -----------------------------------------------------------------------------

  /** Whether the agent spent an approved request's nonce on chain (undefined: the chain did not answer). */
  type SpentRead = boolean | undefined | "unread"

  /**
   * Inside the caller's transaction, on the locked row: a request past its deadline, or of a grant
   * revoked meanwhile, becomes `expired` (its reservation freed). An approved one asks the chain
   * first whether the agent redeemed it itself: `spent` is that answer, read before the row was
   * locked (`spentBefore`), so the lock never waits on the chain; `"unread"` when the request was
   * not approved and due then (it is left to a later pass).
   */
  const expireLocked = (row: ApprovalRow, spent: SpentRead) =>
    Effect.gen(function*() {
      if (row.status !== "pending" && row.status !== "approved") return false
      const past = row.deadline.getTime() <= Date.now()
      const revoked = !past && (yield* repo.grantRevoked(row.delegation_id))
      if (!past && !revoked) return false
      // An operation of it in flight is settled by the relay (executed, or failed: then it expires here).
      const reservation = yield* delegations.reservationState(row.reservation_id)
      if (reservation?.status === "submitted" || reservation?.status === "final") return false
      // The chain decides: approvals the agent redeemed itself (around the relay) spent their nonce.
      if (row.status === "approved") {
        // Approved since it was read, or the chain did not answer: settled on a later pass.
        if (spent === "unread" || spent === undefined) return false
        if (spent) {
          yield* repo.markSpent(row.id)
          yield* log(row, "spent", "spent", row.delegate_address)
          yield* tell(row, "success", "Approved action executed", `${amountText(row)} went to ${row.recipient} (redeemed by the agent itself).`, true)
          return true
        }
      }
      const reason = revoked ? "grant_revoked" : "deadline"
      yield* repo.markExpired(row.id, reason)
      yield* delegations.releaseHeld(row.reservation_id)
      yield* log(row, "expired", "expired", "system", { reason })
      const why = revoked ? "its grant was revoked" : "it was not approved in time"
      yield* tell(row, "info", "Approval request expired", `The request to send ${amountText(row)} to ${row.recipient} expired: ${why}; its budget is free again.`, true)
      return true
    })

  /** Whether the enforcer spent the request's nonce (`undefined`: the chain did not answer). */
  const spentOnChain = (row: ApprovalRow) =>
    Effect.gen(function*() {
      const net = yield* chains.serving(row.chain_id)
      const data = encodeFunctionData({
        abi: approvalEnforcerAbi,
        functionName: "spent",
        args: [row.delegation_manager as Address, row.permission_id as Hex, BigInt(row.nonce)]
      })
      const answer = yield* net.chain.call({ to: row.enforcer as Address, data })
      return BigInt(answer) !== 0n
    }).pipe(Effect.orElseSucceed(() => undefined))

  /** What the chain says of a request that is approved and due (past its deadline, or its grant revoked), read unlocked. */
  const spentBefore = (id: string): Effect.Effect<SpentRead> =>
    Effect.gen(function*() {
      const row = yield* repo.find(id)
      if (row === undefined || row.status !== "approved") return "unread"
      const due = row.deadline.getTime() <= Date.now() || (yield* repo.grantRevoked(row.delegation_id))
      return due ? yield* spentOnChain(row) : "unread"
    }).pipe(Effect.orDie)

  const expire = (id: string) =>
    Effect.flatMap(spentBefore(id), (spent) =>
      transaction(Effect.flatMap(repo.lock(id), (row) => row === undefined ? Effect.succeed(false) : expireLocked(row, spent)))).pipe(
        Effect.orDie
      )

  const sweep = Effect.flatMap(repo.due(100), (ids) => Effect.forEach(ids, expire, { discard: true }))

  // --- the parties' endpoints -----------------------------------------------------------------

  const visible = (signer: Signer, id: string) =>
    Effect.gen(function*() {
      const me = lower(signer.address)
      const mine = yield* repo.partiesOf(me)
      const row = yield* repo.visible(id, me, mine)
      if (row === undefined) return yield* new NotFound({ message: `No approval request ${id}` })
      // Settled on sight when its deadline has passed.
      if (yield* expire(id)) return { row: (yield* repo.find(id))!, me, mine }
      return { row, me, mine }
    })

  const isApproverSide = (row: ApprovalRow, me: string, mine: ReadonlyArray<string>) =>
    row.owner_signer === me || row.approvers.some((a) => mine.includes(a))

  const get = Effect.fn("Approvals.get")(function*(signer: Signer, id: string) {
    return yield* render((yield* visible(signer, id)).row)
  })

  const list = Effect.fn("Approvals.list")(function*(signer: Signer, status: string | undefined) {
    const me = lower(signer.address)
    const mine = yield* repo.partiesOf(me)
    const rows = yield* repo.list(me, mine, status)
    return yield* Effect.forEach(rows, render)
  })

  const settled = (row: ApprovalRow) =>
    new Conflict({ message: `Approval request ${row.id} is ${row.status}`, details: { status: row.status } })

  const approve = Effect.fn("Approvals.approve")(function*(signer: Signer, id: string, input: { readonly signature: string; readonly approver?: string | undefined }) {
    const { row, me, mine } = yield* visible(signer, id)
    // Never the agent's own approval (issue 41): not by its sessions, not in the name of anything it controls.
    const parties = { chainId: row.chain_id, delegate: row.delegate_address, redeemers: yield* repo.redeemersOf(row.delegation_id) }
    const agents = new Map((yield* agentControl.controlledBy(parties)).map((c) => [c.address, c.why]))
    if (agents.has(me) || me === row.requested_by) {
      return yield* new BadRequest({
        message: `The agent cannot approve its own request: ${me} is ${agents.get(me) ?? "the agent that asked"}. Only an approver the agent does not control may approve it`,
        details: { field: "approver" }
      })
    }
    if (!isApproverSide(row, me, mine)) {
      return yield* new BadRequest({ message: "Only the owner or a named approver may approve a request", details: { field: "approver" } })
    }
    const given = new Set((yield* repo.signatures(id)).map((s) => s.approver))
    const approver = input.approver === undefined
      ? row.approvers.find((a) => mine.includes(a) && !given.has(a)) ?? row.approvers.find((a) => mine.includes(a))
      : lower(input.approver)
    if (approver === undefined || !row.approvers.includes(approver)) {
      return yield* new BadRequest({
        message: input.approver === undefined
          ? "approver: none of your addresses is an approver of this request; name the approver whose signature this is"
          : `approver: ${input.approver} is not an approver of this request`,
        details: { field: "approver" }
      })
    }
    const own = yield* agentControl.controlledApprovers(parties, [approver])
    if (own.length > 0) {
      return yield* new BadRequest({
        message: `approver: ${approver} is controlled by the agent (${own[0]!.why}): its approval would be the agent's own, and the chain refuses it`,
        details: { field: "approver" }
      })
    }
    if (row.status !== "pending") return yield* settled(row)
    // Checked as the enforcer will (ECDSA low-s, or ERC-1271 at the approver's account) before it counts.
    const net = yield* chains.serving(row.chain_id)
    const ok = yield* isValidApproverSignature(net.chain, approver as Address, approvalDigest(signable(row)), input.signature as Hex).pipe(Effect.orDie)
    if (!ok) {
      return yield* new BadRequest({
        message: `signature: not ${approver}'s EIP-712 signature of this request's Approval (toSign)`,
        details: { field: "signature" }
      })
    }
    const outcome = yield* transaction(Effect.gen(function*() {
      const locked = (yield* repo.lock(id))!
      // Its due check ran on sight (`visible`); approved meanwhile, it is not this call's to settle.
      if (yield* expireLocked(locked, "unread")) return "expired" as const
      if (locked.status !== "pending") return locked
      if (!(yield* repo.addSignature(id, approver, input.signature, me))) return "ok" as const
      yield* log(locked, `signed:${approver}`, "approved", approver)
      const count = (yield* repo.signatures(id)).length
      if (count >= locked.required) {
        yield* repo.markApproved(id)
        yield* log(locked, "approved", "approved", approver)
        yield* tell(locked, "success", "Request approved", `Sending ${amountText(locked)} to ${locked.recipient} has its ${locked.required} approvals: the agent may build and relay it.`, true)
      }
      return "ok" as const
    })).pipe(Effect.orDie)
    if (outcome === "expired") return yield* new Conflict({ message: `Approval request ${id} expired`, details: { status: "expired" } })
    if (outcome !== "ok") return yield* settled(outcome)
    return yield* render((yield* repo.find(id))!)
  })

  const deny = Effect.fn("Approvals.deny")(function*(signer: Signer, id: string, reason: string) {
    const { row, me, mine } = yield* visible(signer, id)
    if (!isApproverSide(row, me, mine)) {
      return yield* new BadRequest({ message: "Only the owner or a named approver may deny a request" })
    }
    const outcome = yield* transaction(Effect.gen(function*() {
      const locked = (yield* repo.lock(id))!
      // Its due check ran on sight (`visible`); approved meanwhile, it is not this call's to settle.
      if (yield* expireLocked(locked, "unread")) return "expired" as const
      if (locked.status !== "pending") return locked
      yield* repo.markDenied(id, me, reason)
      yield* delegations.releaseHeld(locked.reservation_id)
      yield* log(locked, "denied", "denied", me, { reason })
      yield* tell(locked, "danger", "Request denied", `Sending ${amountText(locked)} to ${locked.recipient} was denied by ${me}: ${reason}`, true)
      return "ok" as const
    })).pipe(Effect.orDie)
    if (outcome === "expired") return yield* new Conflict({ message: `Approval request ${id} expired`, details: { status: "expired" } })
    if (outcome !== "ok") return yield* settled(outcome)
    return yield* render((yield* repo.find(id))!)
  })

  /** The agent's build of an approved request: its approvals as the caveat's args (src/delegations buildApproved). */
  const build = Effect.fn("Approvals.build")(function*(signer: Signer, id: string) {
    const { row, me, mine } = yield* visible(signer, id)
    if (row.status !== "approved") return yield* settled(row)
    if (row.deadline.getTime() - Date.now() < BUILD_MARGIN_MS) {
      return yield* new Conflict({ message: `Approval request ${id} reaches its deadline within a minute: the chain would refuse its approvals` })
    }
    if (row.owner_signer !== me && !mine.includes(row.delegate_address)) {
      return yield* new BadRequest({ message: "Only the agent (the grant's delegate) or the owner builds an approved action" })
    }
    const sigs = yield* repo.signatures(id)
    const answer = yield* delegations.buildApproved(signer, row.delegation_id, {
      requestId: row.id,
      reservationId: row.reservation_id,
      token: row.token_address as Address,
      units: BigInt(row.units),
      recipient: row.recipient as Address,
      ...(row.gas_token === null ? {} : { gasToken: row.gas_token }),
      approvals: {
        nonce: BigInt(row.nonce),
        deadline: BigInt(Math.floor(row.deadline.getTime() / 1000)),
        // The contract checks approvers in any order but needs `required` of them; all given are sent.
        approvals: sigs.map((s) => ({ approver: s.approver as Address, signature: s.signature as Hex }))
      },
      deadline: row.deadline
    })
    yield* repo.markBuilt(id, answer.reservationId)
    return answer.build satisfies UserOpBuild
  })

  // An executed operation that carried a request's approvals: the request is `executed` (in the relay's transaction).
  yield* hooks.registerOnExecuted("delegated_action", "approvals.executed", (op, receipt) => {
    const requestId = op.build.metadata["approvalRequestId"]
    if (typeof requestId !== "string") return Effect.void
    return Effect.gen(function*() {
      const row = yield* repo.lock(requestId)
      if (row === undefined) return
      if (!(yield* repo.markExecuted(requestId, receipt.transactionHash, op.id))) return
      yield* log(row, "spent", "spent", row.delegate_address, { txHash: receipt.transactionHash })
      yield* tell(row, "success", "Approved action executed", `${amountText(row)} went to ${row.recipient} (transaction ${receipt.transactionHash}).`, true)
    }).pipe(Effect.orDie)
  })
  yield* gate.register({ open, pending })
  yield* sweep.pipe(Effect.catchCause(() => Effect.void), Effect.repeat(Schedule.spaced(yield* ApprovalSweep)), Effect.forkScoped)

  return { get, list, approve, deny, build, sweep }
})

type Shape = Effect.Success<typeof make>

export class Approvals extends Context.Service<Approvals, Shape>()("das/approvals/Approvals") {
  /** Registers into the delegations feature's ApprovalGate and the relay's hooks; settles due requests every `APPROVALS_SWEEP_INTERVAL`. */
  static readonly layer = Layer.effect(Approvals, make).pipe(Layer.provide(Layer.mergeAll(ApprovalRepo.layer, AuditLive, ApproverContacts.layer)))
}
