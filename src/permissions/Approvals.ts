/**
 * Requests and revokes that wait for the owner (docs/permissions.md, "The owner's signatures"):
 * a `wallet_requestExecutionPermissions` request is mapped (Erc7715.ts) and built exactly as
 * `POST /delegations/build` builds (policy, summary, unsigned enable, simulation, the delegation
 * to sign); a `wallet_revokeExecutionPermission` context is decoded to its grant and the gasless
 * revoke is built. Both are stored as an approval the owner's wallet completes with its
 * signatures (the enable through `POST /delegations`' own path, the revoke through the relay) or
 * rejects; a JSON-RPC caller waits for that decision. SQL: PermissionRepo.ts.
 */
import { decodeDelegations, hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { Data, Duration, Effect } from "effect"
import { type Address, type Hex, toHex } from "viem"
import { Accounts } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, Conflict, NotFound, UpstreamTimeout } from "../api/Errors.ts"
import { upstreamError } from "../builds/Wire.ts"
import { Chains, servedList } from "../chain/Chains.ts"
import { recoverLegSigner, type Delegation as DfDelegation } from "../delegations/Caveats.ts"
import { DelegationRepo } from "../delegations/DelegationRepo.ts"
import { Delegations, MinLifetime } from "../delegations/Delegations.ts"
import { startOnChain } from "../delegations/Periods.ts"
import type { DelegationBuild } from "../delegations/Domain.ts"
import { Relay } from "../delegations/Ports.ts"
import type { Signer } from "../delegations/Reads.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import { cleanOutsideText } from "../domain/OutsideText.ts"
import { Notifications } from "../notifications/Notifications.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import type { ApprovalSignatures, PermissionApproval } from "./Domain.ts"
import { MAX_REQUESTS } from "./Domain.ts"
import { type Adjustment, decodeRequest, type MappedRequest, type MappingContext, toBuildInput } from "./Erc7715.ts"
import type { Granted } from "./Granted.ts"
import { type ApprovalRow, type NewApproval, PermissionRepo } from "./PermissionRepo.ts"
import type { SupportedPermissions } from "./Supported.ts"

/**
 * A request the chain cannot hold exactly, or that is malformed: which request (`index`; absent:
 * the list itself) and which of its fields. The HTTP twin answers it as a 400 (`requests[i].…`),
 * the JSON-RPC endpoint as invalid params (`params[i].…`).
 */
export class PermissionRefused extends Data.TaggedError("PermissionRefused")<{
  readonly index?: number
  readonly field: string
  readonly message: string
  readonly supported?: SupportedPermissions
  readonly served?: ReadonlyArray<{ readonly chainId: number; readonly name: string }>
}> {}

/** A grant of a stored approval: where, by which account, the request as granted, the build to sign. */
interface GrantItem {
  readonly chainId: number
  readonly accountId: string
  readonly request: MappedRequest
  readonly build: typeof DelegationBuild.Type
  readonly adjustments?: ReadonlyArray<Adjustment>
  readonly delegationId?: string
}
interface RevokeItem {
  readonly delegationId: string
  readonly permissionId: Hex
  readonly chainId: number
  readonly build: UserOpBuild
}


/** Most characters of an agent's justification (the owner reads it; a name is cut further, OutsideText.ts). */
export const ASK_JUSTIFICATION_MAX = 280
/** Most whole tokens an agent may ask for in one amount: above it the ask is refused, not offered to the owner. */
export const ASK_MAX_TOKENS = 1_000_000_000

/** How long an approval is offered when its builds carry no expiry of their own. */
const DEFAULT_OFFER_MS = 10 * 60_000
/** How long `approve` waits for a relayed revoke to settle before answering 504 (repeat to get its result). */
const REVOKE_WAIT_MS = 30_000

export const makeApprovals = (granted: Granted) => Effect.gen(function*() {
  const repo = yield* PermissionRepo
  const delegations = yield* Delegations
  const delegationRepo = yield* DelegationRepo
  const accounts = yield* Accounts
  const chains = yield* Chains
  const tokens = yield* TokenRegistry
  const relay = yield* Relay
  const notifications = yield* Notifications
  const minLifetimeMs = Duration.toMillis(yield* MinLifetime)
  const supported = yield* granted.supported
  const lower = (s: string) => s.toLowerCase()

  const view = (row: ApprovalRow, now = new Date()): PermissionApproval => {
    const status: PermissionApproval["status"] = row.status === "pending" && row.expires_at.getTime() <= now.getTime() ? "expired" : row.status
    const base = {
      id: row.id,
      kind: row.kind,
      status,
      createdAt: row.created_at.toISOString(),
      expiresAt: row.expires_at.toISOString(),
      ...(row.decided_at === null ? {} : { decidedAt: row.decided_at.toISOString() }),
      ...(row.failure === null ? {} : { failure: row.failure }),
      ...(row.permissions === null ? {} : { permissions: row.permissions as PermissionApproval["permissions"] & {} }),
      ...(row.requested_by === null ? {} : { requestedBy: row.requested_by as Address })
    }
    if (row.kind === "revoke") return { ...base, revoke: row.items[0] as RevokeItem }
    return {
      ...base,
      grants: (row.items as ReadonlyArray<GrantItem>).map((i) => ({
        request: i.request as never,
        build: i.build,
        ...(i.adjustments === undefined || i.adjustments.length === 0 ? {} : { adjustments: i.adjustments }),
        ...(i.delegationId === undefined ? {} : { delegationId: i.delegationId })
      }))
    }
  }

  // ---------------------------------------------------------------------------------
  // Requests

  /** The account that grants on `chainId`: the one `from` names among the signer's, else the first. */
  const grantingAccount = (signer: Signer, chainId: number, from: string | undefined) =>
    Effect.gen(function*() {
      const own = (yield* accounts.list(signer.address as Address)).filter((a) => a.chainId === chainId)
      const named = from === undefined ? undefined : own.find((a) => lower(a.address) === lower(from))
      return named ?? (yield* accounts.resolve(signer.address as Address, { chainId }).pipe(Effect.orDie))
    })

  /** Maps every request (all or none), then builds each as `POST /delegations/build` does, and offers them. */
  const request = Effect.fn("Permissions.request")(function*(signer: Signer, raws: ReadonlyArray<unknown>) {
    return yield* offer(signer, raws, repo.insert)
  })

  /** `request`'s work; `requestedBy`: the agent whose ask this is (stored with the owner's approval). */
  const askPending = (approvalId: string) =>
    Effect.fail(new Conflict({ message: "An ask of this owner is already pending: wait for the owner's answer (or its expiry)", details: { approvalId } }))

  /** `store`: how the approval is stored (an agent's ask: only while none of the pair is pending). */
  const offer = <E>(signer: Signer, raws: ReadonlyArray<unknown>, store: (approval: NewApproval) => Effect.Effect<void, E>) => Effect.gen(function*() {
    if (raws.length === 0 || raws.length > MAX_REQUESTS) {
      return yield* new PermissionRefused({ field: "", message: `between 1 and ${MAX_REQUESTS} permission requests are taken at once` })
    }
    const now = new Date()
    const mapped: Array<{
      readonly account: Account
      readonly input: Parameters<typeof delegations.build>[1]
      readonly granted: MappedRequest
      readonly adjustments: ReadonlyArray<Adjustment>
    }> = []
    for (const [index, raw] of raws.entries()) {
      const decoded = decodeRequest(raw, supported)
      if (decoded._tag === "Refused") return yield* new PermissionRefused({ index, ...refusalFields(decoded) })
      const chainId = Number(BigInt(decoded.value.chainId))
      if (chains.find(chainId) === undefined) {
        const served = servedList(chains.all)
        return yield* new PermissionRefused({
          index,
          field: "chainId",
          message: `chain ${decoded.value.chainId} (${chainId}) is not served here; served: ${served.map((c) => `${toHex(c.chainId)} (${c.chainId}, ${c.name})`).join(", ")}`,
          served,
          supported
        })
      }
      const account = yield* grantingAccount(signer, chainId, decoded.value.from)
      // A periodic permission from "now": from the time the chain has reached (Periods.ts `startOnChain`).
      const permission = decoded.value.permission
      const fromChain = permission.type.endsWith("-periodic") && permission.data["startTime"] === undefined
        ? startOnChain(now, yield* Effect.mapError(chains.find(chainId)!.chain.headTimestamp, upstreamError))
        : undefined
      const ctx: MappingContext = {
        chainIds: chains.ids,
        supported,
        now,
        ...(fromChain === undefined ? {} : { startOnChain: fromChain }),
        tokenOf: (c, address) => tokens.byAddress(c, address),
        knownTokens: (c) => tokens.all.filter((t) => t.chainId === c),
        account: account.address,
        minLifetimeMs
      }
      const result = toBuildInput(decoded.value, ctx)
      if (result._tag === "Refused") return yield* new PermissionRefused({ index, ...refusalFields(result) })
      mapped.push({
        account,
        input: { ...result.input, accountId: account.id },
        granted: { ...result.granted, from: lower(account.address) as Hex },
        adjustments: result.adjustments
      })
    }
    const items: Array<GrantItem> = []
    // Several grants of one account are enabled one after the other (approve relays them in order):
    // each later one takes the next nonce, and only the first deploys the account.
    const before = new Map<string, number>()
    for (const [index, m] of mapped.entries()) {
      const queuedBehind = before.get(m.account.id) ?? 0
      before.set(m.account.id, queuedBehind + 1)
      const build = yield* delegations.build(signer, m.input, queuedBehind).pipe(
        // What only the build can tell (the delegate is a contract of the deployment, the account itself): the field is `to`.
        Effect.catchTag("BadRequest", (e) =>
          Effect.fail(new PermissionRefused({ index, field: e.message.startsWith("delegateeAddress") ? "to" : "", message: e.message })))
      )
      items.push({
        chainId: m.account.chainId,
        accountId: m.account.id,
        request: m.granted,
        build,
        ...(m.adjustments.length === 0 ? {} : { adjustments: m.adjustments })
      })
    }
    const expiresAt = new Date(Math.min(...items.map((i) => new Date(i.build.expiresAt ?? now.getTime() + DEFAULT_OFFER_MS).getTime())))
    const id = `pap_${crypto.randomUUID()}`
    yield* store({ id, signerAddress: lower(signer.address), kind: "grant", items, expiresAt })
    return view((yield* repo.find(id, lower(signer.address)))!)
  })

  // ---------------------------------------------------------------------------------
  // An agent's ask (issue 43): a new permission asked of an owner the agent works for

  /**
   * An agent asks an owner for a new permission: one ERC-7715 request whose `from` is the owner's
   * account and whose `to` is the agent (its key or one of its accounts on that chain). Checked as
   * a dApp's request is (all of `decodeRequest` and `toBuildInput`), and beyond it: the agent must
   * already hold or have held a grant of that account (anyone else's account: 404, as if it did not
   * exist), give a justification, ask for no more than `ASK_MAX_TOKENS` whole tokens, and have no
   * other ask of this owner pending (409). Built for the owner and stored as the owner's approval
   * (`GET /permissions/approvals`: its wallet signs or rejects it); the owner is told. Nothing is
   * granted until the owner signs.
   */
  const ask = Effect.fn("Permissions.ask")(function*(agent: Signer, raw: unknown) {
    const agentAddress = lower(agent.address)
    const decoded = decodeRequest(raw, supported)
    if (decoded._tag === "Refused") return yield* new PermissionRefused({ ...refusalFields(decoded) })
    const req = decoded.value
    const chainId = Number(BigInt(req.chainId))
    if (req.from === undefined || req.from === null) {
      return yield* new PermissionRefused({ field: "from", message: "from must name the owner's account the agent asks (an agent asks an owner it works for)" })
    }
    if (chains.find(chainId) === undefined) {
      const served = servedList(chains.all)
      return yield* new PermissionRefused({ field: "chainId", message: `chain ${req.chainId} (${chainId}) is not served here`, served })
    }
    // The agent asks for itself only: its own key, or one of its accounts on that chain.
    const own = [agentAddress, ...(yield* accounts.list(agent.address as Address)).filter((a) => a.chainId === chainId).map((a) => lower(a.address))]
    if (!own.includes(lower(req.to))) {
      return yield* new PermissionRefused({ field: "to", message: `to must be the asking agent (${agentAddress}) or one of its accounts on chain ${chainId}` })
    }
    const data = req.permission.data as Record<string, unknown>
    const justification = typeof data["justification"] === "string" ? cleanOutsideText(data["justification"], ASK_JUSTIFICATION_MAX) : ""
    if (justification === "") {
      return yield* new PermissionRefused({ field: "permission.data.justification", message: "permission.data.justification must say why the agent asks (the owner reads it)" })
    }
    if (Array.from(String(data["justification"])).length > ASK_JUSTIFICATION_MAX) {
      return yield* new PermissionRefused({
        field: "permission.data.justification",
        message: `permission.data.justification must be at most ${ASK_JUSTIFICATION_MAX} characters`
      })
    }
    const tokenAddress = typeof data["tokenAddress"] === "string" ? data["tokenAddress"] : undefined
    const decimals = tokenAddress === undefined ? 18 : tokens.byAddress(chainId, tokenAddress)?.decimals
    if (decimals !== undefined) {
      const ceiling = BigInt(ASK_MAX_TOKENS) * 10n ** BigInt(decimals)
      for (const field of ["periodAmount", "allowanceAmount", "maxAmount", "initialAmount", "amountPerSecond"]) {
        // Decoded amounts are the wire's hex quantities.
        const v = data[field]
        if (typeof v === "string" && BigInt(v) > ceiling) {
          return yield* new PermissionRefused({
            field: `permission.data.${field}`,
            message: `permission.data.${field} asks for more than ${ASK_MAX_TOKENS.toLocaleString("en-US")} whole tokens: an agent's ask is refused above that`
          })
        }
      }
    }
    // The owner: an account that granted this agent before (any status). Anyone else's account reads as not found.
    const account = yield* delegationRepo.accountByAddress(lower(req.from), chainId)
    const held = account === undefined ? [] : yield* delegationRepo.listHeld(own, chainId)
    const worksFor = account === undefined ? undefined : held.find((d) => d.account_id === account.id)
    if (account === undefined || worksFor === undefined) {
      return yield* new NotFound({
        message: `No account ${lower(req.from)} on chain ${chainId} has granted this agent anything: an agent asks only an owner it works for`,
        details: { field: "from" }
      })
    }
    const owner = lower(worksFor.signer_address)
    const open = yield* repo.pendingAsk(agentAddress, owner)
    if (open !== undefined) return yield* askPending(open.id)
    const ownerSigner: Signer = { address: owner as Address, sessionId: `ask:${agentAddress}`, sessionExpiresAt: new Date(Date.now() + DEFAULT_OFFER_MS) }
    // Read before building (a fast 409) and again under the pair's lock as it is stored (two asks at once: one stored).
    const storeAsk = (approval: NewApproval) =>
      Effect.flatMap(repo.insertAsk({ ...approval, requestedBy: agentAddress }), (o) => o === undefined ? Effect.void : askPending(o.pending))
    const approval = yield* offer(ownerSigner, [raw], storeAsk).pipe(
      // One request: its fields are named without an index.
      Effect.mapError((e) => e._tag === "PermissionRefused" ? new PermissionRefused({ ...refusalFields(e), ...(e.served === undefined ? {} : { served: e.served }) }) : e)
    )
    const grant = approval.grants?.[0]
    yield* notifications.notify(owner as Address, {
      tone: "warning",
      title: "An agent asks for a new permission",
      body: `${grant?.build.humanSummary ?? "A new grant"} Asked by ${agentAddress}. Sign it in your wallet or reject it.`,
      relatedType: "permission_approval",
      relatedId: approval.id,
      action: { label: "Review request", target: `permissions/approvals/${approval.id}` }
    })
    return approval
  })

  /** The agent's ask as it now stands (its owner's approval); anyone else's is not found. */
  const asked = Effect.fn("Permissions.asked")(function*(agent: Signer, id: string) {
    const row = yield* repo.findAsked(id, lower(agent.address))
    if (row === undefined) return yield* new NotFound({ message: `No permission request ${id} of this agent` })
    return view(yield* refresh(row.signer_address, row))
  })

  // ---------------------------------------------------------------------------------
  // Revokes

  /** The signer's grant a permission context redeems (its root delegation), on any chain and account. */
  const grantOfContext = (signer: Signer, permissionContext: string) =>
    Effect.gen(function*() {
      const chain = yield* Effect.try({
        try: () => decodeDelegations(permissionContext as Hex),
        catch: () => new PermissionRefused({ field: "permissionContext", message: "permissionContext is not an ABI-encoded list of delegations (ERC-7710)" })
      })
      const root = chain[chain.length - 1]
      if (root === undefined) return yield* new PermissionRefused({ field: "permissionContext", message: "permissionContext holds no delegation" })
      const permissionId = lower(hashDelegation(root))
      const rows = yield* delegationRepo.listOwnedBySigner(lower(signer.address))
      const row = rows.find((r) => lower(r.permission_id) === permissionId)
      if (row !== undefined) return row
      return yield* new NotFound({
        message: "permissionContext names no grant of this signer's accounts",
        details: { field: "permissionContext", permissionId }
      })
    })

  /** The revoke build of the context's grant, offered to the owner; `revoked` when it already is. */
  const revoke = Effect.fn("Permissions.revoke")(function*(signer: Signer, permissionContext: string) {
    const row = yield* grantOfContext(signer, permissionContext)
    if (row.status === "revoked") return { _tag: "AlreadyRevoked" as const, delegationId: row.id }
    const build = yield* delegations.revoke(signer, row.id)
    const item: RevokeItem = { delegationId: row.id, permissionId: row.permission_id as Hex, chainId: row.chain_id, build }
    const id = `pap_${crypto.randomUUID()}`
    const expiresAt = new Date(build.expiresAt ?? Date.now() + DEFAULT_OFFER_MS)
    yield* repo.insert({ id, signerAddress: lower(signer.address), kind: "revoke", items: [item], expiresAt })
    return { _tag: "Offered" as const, approval: view((yield* repo.find(id, lower(signer.address)))!) }
  })

  // ---------------------------------------------------------------------------------
  // Completion

  /**
   * Settles an approval from what happened since: grants whose enables all executed are granted
   * (with their standard responses), one whose enable failed is failed; a revoke whose grant is
   * revoked (by it or any other way) is revoked. Answers the row as it now is.
   */
  const refresh = (ownerAddress: string, row: ApprovalRow) =>
    Effect.gen(function*() {
      const owner = lower(ownerAddress)
      if (row.kind === "revoke" && (row.status === "pending" || row.status === "approving")) {
        const item = row.items[0] as RevokeItem
        const grant = yield* delegationRepo.findOwned(item.delegationId, owner)
        if (grant?.status === "revoked") yield* repo.decide(row.id, "revoked", {})
      } else if (row.kind === "grant" && row.status === "approving") {
        // A grant whose approval was cut short (a 504, a stopped process) is found by its build.
        const items = yield* Effect.forEach(row.items as ReadonlyArray<GrantItem>, (i) =>
          i.delegationId !== undefined || i.build.buildId === undefined
            ? Effect.succeed(i)
            : Effect.map(delegationRepo.findByBuild(i.build.buildId), (d) => d === undefined ? i : { ...i, delegationId: d.id }))
        if (items.some((i) => i.delegationId === undefined)) return row
        if (items.some((i, j) => (row.items as ReadonlyArray<GrantItem>)[j]!.delegationId !== i.delegationId)) yield* repo.setItems(row.id, items)
        const grants = yield* Effect.forEach(items, (i) => delegationRepo.findOwned(i.delegationId!, owner))
        const failed = grants.find((g) => g === undefined || g.status === "failed")
        if (failed !== undefined) {
          yield* repo.decide(row.id, "failed", { failure: failed?.failure_reason ?? "the enable operation did not execute" })
        } else if (grants.every((g) => g!.status === "active" || g!.status === "revoked")) {
          const responses = yield* Effect.forEach(items, (item, i) =>
            Effect.gen(function*() {
              const account = yield* accounts.findById(owner as Address, item.accountId).pipe(Effect.orDie)
              const response = yield* granted.responseFor(grants[i]!, item.request, account)
              // The dApp's answer says what was granted differently from what it asked.
              return response === undefined || item.adjustments === undefined || item.adjustments.length === 0
                ? response
                : { ...response, adjustments: item.adjustments }
            }))
          yield* repo.decide(row.id, "granted", { permissions: responses.filter((r) => r !== undefined) })
        }
      } else {
        return row
      }
      return (yield* repo.find(row.id, owner)) ?? row
    })

  const find = (signer: Signer, id: string) =>
    Effect.gen(function*() {
      const row = yield* repo.find(id, lower(signer.address))
      if (row === undefined) return yield* new NotFound({ message: `No permission approval ${id}` })
      return yield* refresh(signer.address, row)
    })

  const get = Effect.fn("Permissions.approval")(function*(signer: Signer, id: string) {
    return view(yield* find(signer, id))
  })

  const list = Effect.fn("Permissions.approvals")(function*(signer: Signer, status?: PermissionApproval["status"]) {
    const rows = yield* repo.list(lower(signer.address), 100)
    const fresh = yield* Effect.forEach(rows, (r) => refresh(signer.address, r))
    const views = fresh.map((r) => view(r))
    return status === undefined ? views : views.filter((v) => v.status === status)
  })

  /** Waits (polling the store, so the approval may arrive at any replica) until decided, expired or `until`. */
  const awaitDecision = Effect.fn("Permissions.awaitDecision")(function*(signer: Signer, id: string, until: Date) {
    while (true) {
      const approval = view(yield* find(signer, id))
      if (approval.status !== "pending" && approval.status !== "approving") return approval
      if (Date.now() >= until.getTime() || (approval.status === "pending" && Date.now() >= new Date(approval.expiresAt).getTime())) {
        return approval
      }
      yield* Effect.sleep(Duration.millis(250))
    }
  })

  // ---------------------------------------------------------------------------------
  // The owner's answer

  const notApprovable = (row: ApprovalRow) =>
    new Conflict({
      message: `This ${row.kind} is ${view(row).status}: it can no longer be approved`,
      details: { approvalId: row.id, status: view(row).status }
    })

  const approveGrant = (signer: Signer, row: ApprovalRow, signed: ApprovalSignatures["signatures"]) =>
    Effect.gen(function*() {
      const items = [...(row.items as ReadonlyArray<GrantItem>)]
      if (signed.length !== items.length) {
        return yield* new BadRequest({ message: `signatures must carry one entry per grant (${items.length}), in order`, details: { field: "signatures" } })
      }
      // Every signature checked before anything is relayed: a wrong one never leaves a grant half enabled.
      for (const [i, item] of items.entries()) {
        const s = signed[i]!
        if (lower(s.userOpHash) !== lower(item.build.userOpHash)) {
          return yield* new BadRequest({ message: `signatures[${i}] is not for grant ${i}'s enable operation`, details: { field: `signatures[${i}].userOpHash` } })
        }
        const net = yield* chains.serving(item.chainId)
        for (const leg of item.build.delegations) {
          const sig = (s.delegationSignatures ?? []).find((d) => lower(d.permissionId) === lower(leg.permissionId))
          const recovered = sig === undefined ? undefined : yield* Effect.tryPromise(() =>
            recoverLegSigner(leg.delegation as DfDelegation, sig.signature as Hex, item.chainId, net.network.delegation.DelegationManager)
          ).pipe(Effect.orElseSucceed(() => undefined))
          if (recovered === undefined || lower(recovered) !== lower(signer.address)) {
            return yield* new BadRequest({
              message: `signatures[${i}].delegationSignatures must carry the owner's EIP-712 signature of delegation ${leg.permissionId}`,
              details: { field: `signatures[${i}].delegationSignatures` }
            })
          }
        }
      }
      const begun = yield* repo.begin(row.id, lower(signer.address))
      if (begun === undefined) return yield* notApprovable(row)
      for (const [i, item] of items.entries()) {
        // Enabled by an earlier attempt of this approval (one that answered 504): never relayed twice.
        if (item.delegationId !== undefined) continue
        const s = signed[i]!
        const enable = delegations.create(signer, {
          userOp: s.userOp,
          userOpHash: s.userOpHash,
          intentType: "delegation_enable",
          delegationSignatures: s.delegationSignatures ?? []
        })
        const created = yield* enable.pipe(
          // Another approval of the same answer is relaying it right now: a repeat waits for its result.
          Effect.catchTag("Conflict", () => enable),
          Effect.map((d) => d.id),
          Effect.tapError((e) =>
            e._tag === "Conflict"
              // The enable did not execute: the approval failed (build again).
              ? repo.decide(row.id, "failed", { failure: e.message })
              : e._tag === "UpstreamTimeout" || e._tag === "ServiceUnavailable"
              // Relayed (or stored to send), not executed yet: repeating the approval, or reading it, answers its result.
              ? Effect.void
              : items.every((x) => x.delegationId === undefined)
              // Nothing enabled (an expired build, a refusal): the owner may sign again or reject.
              ? repo.reopen(row.id)
              : Effect.void)
        )
        items[i] = { ...item, delegationId: created }
        yield* repo.setItems(row.id, items)
      }
      return yield* find(signer, row.id)
    })

  const approveRevoke = (signer: Signer, row: ApprovalRow, signed: ApprovalSignatures["signatures"]) =>
    Effect.gen(function*() {
      const item = row.items[0] as RevokeItem
      const s = signed[0]!
      if (signed.length !== 1 || lower(s.userOpHash) !== lower(item.build.userOpHash)) {
        return yield* new BadRequest({ message: "signatures must carry the one signed revoke operation of this approval", details: { field: "signatures" } })
      }
      const begun = yield* repo.begin(row.id, lower(signer.address))
      if (begun === undefined) return yield* notApprovable(row)
      let receipt = yield* relay.submit(signer.address, s.userOp).pipe(
        Effect.tapError((e) => e._tag === "ServiceUnavailable" || e._tag === "UpstreamTimeout" ? Effect.void : repo.reopen(row.id))
      )
      const deadline = Date.now() + REVOKE_WAIT_MS
      while (receipt.status === "submitted" && Date.now() < deadline) {
        yield* Effect.sleep(Duration.millis(250))
        receipt = yield* relay.get(signer.address, receipt.userOpId).pipe(Effect.orDie)
      }
      if (receipt.status === "submitted") {
        return yield* new UpstreamTimeout({
          message: "The revoke was relayed but has not executed yet; repeat this request (or read the approval) to get its result",
          details: { approvalId: row.id, userOpHash: receipt.userOpHash }
        })
      }
      if (receipt.outcome !== "mined") {
        yield* repo.decide(row.id, "failed", { failure: `the revoke did not execute (${receipt.outcome}${receipt.reason === undefined ? "" : `: ${receipt.reason}`})` })
      }
      return yield* find(signer, row.id)
    })

  const approve = Effect.fn("Permissions.approve")(function*(signer: Signer, id: string, signatures: ApprovalSignatures) {
    const row = yield* find(signer, id)
    if (row.status === "granted" || row.status === "revoked") return view(row)
    if (row.status !== "pending" && row.status !== "approving") return yield* notApprovable(row)
    const done = row.kind === "grant" ? approveGrant(signer, row, signatures.signatures) : approveRevoke(signer, row, signatures.signatures)
    return view(yield* done)
  })

  const reject = Effect.fn("Permissions.reject")(function*(signer: Signer, id: string) {
    const row = yield* find(signer, id)
    if (row.status === "rejected") return view(row)
    const rejected = yield* repo.reject(id, lower(signer.address))
    if (rejected === undefined) return yield* notApprovable(row)
    return view(rejected)
  })

  return { request, ask, asked, revoke, get, list, approve, reject, awaitDecision }
})

export type Approvals = Effect.Success<ReturnType<typeof makeApprovals>>

const refusalFields = (r: { readonly field: string; readonly message: string; readonly supported?: SupportedPermissions }) => ({
  field: r.field,
  message: r.message,
  ...(r.supported === undefined ? {} : { supported: r.supported })
})
