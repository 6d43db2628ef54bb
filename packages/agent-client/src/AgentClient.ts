/**
 * The agent's side of the service, over plain `fetch`: sign in with its key, read the grants it
 * holds and what is left of them, act within a grant (the service builds the operation, the
 * agent's key signs it, the relay sends it, the receipt is polled), read a receipt and an audit
 * entry's inclusion proof, ask its owner for more. Nothing here approves, widens or revokes: those
 * are the owner's (its console or wallet).
 *
 *   const agent = await AgentClient.signIn({ baseUrl: "http://127.0.0.1:8080", signer: privateKeyToAccount(key) })
 *   const [grant] = await agent.grants({ status: "active" })
 *   const { receipt } = await agent.act(grant.id, { recipient: "shop", amount: 2 })
 *
 * Every failure is an `ApiError` with the service's envelope (`code`, `declineReason`, `details`).
 */
import { type PayerScope, type PaymentAuthorizer, type PayingFetch, payingFetch, serviceAuthorizer } from "@das/x402-erc7710"
import type { Address, Hex, LocalAccount } from "viem"
import { ApiError } from "./errors.ts"
import { pollReceipt, type PollOptions } from "./poll.ts"
import { signInMessage } from "./signIn.ts"
import type {
  AuditProof,
  Delegation,
  DelegationStatus,
  GrantChangeRequest,
  GrantChanges,
  GrantChangeStatus,
  PermissionAsk,
  PermissionRequest,
  Session,
  SignInNonce,
  UserOpBuild,
  UserOperation,
  UserOpReceipt,
  X402Payment,
  X402PaymentStatus
} from "./wire.ts"

/** The agent's key: what signing in, an operation and a payment delegation need. */
export type AgentSigner = Pick<LocalAccount, "address" | "signMessage" | "signTypedData">

export interface ConnectOptions {
  /** The service, e.g. `http://127.0.0.1:8080` (no trailing slash needed). */
  readonly baseUrl: string
  /** `fetch` to use (default the global one). */
  readonly fetch?: typeof globalThis.fetch
}

export interface AgentClientOptions extends ConnectOptions {
  /** The session bearer (`POST /auth/session`). */
  readonly token: string
  /** The agent's key; without it the client reads and builds but cannot sign. */
  readonly signer?: AgentSigner
  /** The session as signed in (its accounts), when known. */
  readonly session?: Session
}

/** One action within a grant: `recipient` a name on the allowlist or an address; `amount` in token units. */
export interface ActionInput {
  readonly recipient: string
  readonly amount: number
  /** The budget token's symbol (default: the per-action maximum's token). */
  readonly token?: string
}

/** A grant's limits in plain numbers (token units), from `GET /delegations/{id}`. */
export interface GrantLimits {
  readonly delegationId: string
  readonly status: DelegationStatus
  readonly chainId: number
  readonly summary: string
  readonly perActionMax: { readonly token: string; readonly amount: number }
  readonly maxActions: number
  readonly expiresAt: string
  readonly budgets: ReadonlyArray<{
    readonly token: string
    readonly limit: number
    readonly spent: number
    readonly reserved: number
    readonly left: number
    /** When a renewing budget's period resets. */
    readonly renewsAt?: string
  }>
}

export const limitsOf = (grant: Delegation): GrantLimits => ({
  delegationId: grant.id,
  status: grant.status,
  chainId: grant.chainId,
  summary: grant.humanSummary,
  perActionMax: { token: grant.policySet.perActionMax.token.symbol, amount: grant.policySet.perActionMax.amount },
  maxActions: grant.policySet.maxActions,
  expiresAt: grant.policySet.expiresAt,
  budgets: grant.spentToDate.map((s) => ({
    token: s.token.symbol,
    limit: s.limit,
    spent: s.spent,
    reserved: s.reserved ?? 0,
    left: s.remaining,
    ...(s.resetsAt === undefined ? {} : { renewsAt: s.resetsAt })
  }))
})

const trimSlash = (url: string) => url.replace(/\/+$/, "")

/** One JSON call; a non-2xx answer is an `ApiError` with the envelope. */
export const callService = async <T>(
  options: ConnectOptions & { readonly token?: string | undefined },
  method: string,
  path: string,
  body?: unknown
): Promise<T> => {
  const res = await (options.fetch ?? globalThis.fetch)(`${trimSlash(options.baseUrl)}${path}`, {
    method,
    headers: {
      accept: "application/json",
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  let json: unknown = undefined
  if (text !== "") {
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
  }
  if (!res.ok) throw new ApiError(res.status, method, path, json)
  return json as T
}

const query = (q: { readonly [k: string]: string | number | undefined }) => {
  const entries = Object.entries(q).filter((e): e is [string, string | number] => e[1] !== undefined)
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`
}

export class AgentClient {
  readonly baseUrl: string
  readonly token: string
  readonly signer: AgentSigner | undefined
  readonly session: Session | undefined
  private readonly fetchFn: typeof globalThis.fetch | undefined

  constructor(options: AgentClientOptions) {
    this.baseUrl = trimSlash(options.baseUrl)
    this.token = options.token
    this.signer = options.signer
    this.session = options.session
    this.fetchFn = options.fetch
  }

  /** Sign in with the agent's key (SIWE: `POST /auth/nonce`, `POST /auth/session`). */
  static async signIn(options: ConnectOptions & { readonly signer: AgentSigner }): Promise<AgentClient> {
    const session = await signInWith(options, options.signer)
    return new AgentClient({ ...options, token: session.token, session })
  }

  /** An authenticated JSON call to any endpoint of the service (`ApiError` on failure). */
  call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return callService<T>({ baseUrl: this.baseUrl, token: this.token, ...(this.fetchFn === undefined ? {} : { fetch: this.fetchFn }) }, method, path, body)
  }

  /** The agent's address (the signer's; else the session's signer). */
  get address(): Address | undefined {
    return this.signer?.address ?? this.session?.signerAddress
  }

  // ---- grants and limits -------------------------------------------------------------

  /** The grants the agent holds (its key, or one of its accounts, is the delegate), newest first. */
  grants(q: { readonly status?: DelegationStatus; readonly chainId?: number } = {}): Promise<ReadonlyArray<Delegation>> {
    return this.call("GET", `/delegations${query({ role: "delegatee", status: q.status, chainId: q.chainId })}`)
  }

  /** One grant the agent holds (anyone else's is a 404). */
  grant(delegationId: string): Promise<Delegation> {
    return this.call("GET", `/delegations/${encodeURIComponent(delegationId)}`)
  }

  /** A grant's limits, spent, reserved, left and renewal. */
  async limits(delegationId: string): Promise<GrantLimits> {
    return limitsOf(await this.grant(delegationId))
  }

  // ---- acting within a grant ---------------------------------------------------------

  /** The service builds the operation for one transfer within the grant (a decline: `ApiError` with `declineReason`). */
  buildAction(delegationId: string, input: ActionInput): Promise<UserOpBuild> {
    return this.call("POST", `/delegations/${encodeURIComponent(delegationId)}/actions`, input)
  }

  /** The agent's key signs a build's EIP-712 typed data: the operation to relay. */
  async sign(build: UserOpBuild): Promise<UserOperation> {
    const signer = this.requireSigner("sign an operation")
    if (build.typedData === undefined) throw new Error("the build carries no typed data to sign")
    const signature: Hex = await signer.signTypedData(build.typedData as unknown as Parameters<AgentSigner["signTypedData"]>[0])
    return { ...build.userOp, signature }
  }

  /** Relay a signed operation (`POST /userops`); answers the first receipt (usually `submitted`). */
  submit(userOp: UserOperation): Promise<UserOpReceipt> {
    return this.call("POST", "/userops", userOp)
  }

  /** An operation's receipt (`GET /userops/{id}`); `waitMs` long-polls for its outcome. */
  receipt(userOpId: string, waitMs = 0): Promise<UserOpReceipt> {
    return this.call("GET", `/userops/${encodeURIComponent(userOpId)}${waitMs > 0 ? query({ wait: `${waitMs}ms` }) : ""}`)
  }

  /** Poll a receipt until `included` or `failed` (the contract's recommended polling). */
  waitForReceipt(userOpId: string, options: PollOptions = {}): Promise<UserOpReceipt> {
    return pollReceipt((id, waitMs) => this.receipt(id, waitMs), userOpId, options)
  }

  /** Sign a build, relay it and wait for its outcome. */
  async relay(build: UserOpBuild, options: PollOptions = {}): Promise<UserOpReceipt> {
    const first = await this.submit(await this.sign(build))
    return first.status === "submitted" ? this.waitForReceipt(first.userOpId, options) : first
  }

  /** One action within a grant: built, signed with the agent's key, relayed, its receipt. */
  async act(delegationId: string, input: ActionInput, options: PollOptions = {}): Promise<{ readonly build: UserOpBuild; readonly receipt: UserOpReceipt }> {
    const build = await this.buildAction(delegationId, input)
    return { build, receipt: await this.relay(build, options) }
  }

  /**
   * Deploy the agent's own smart account (`account_deploy`, signed with its key, relayed): a
   * smart-account delegate needs code before its ERC-1271 can vouch for an x402 payment it signs
   * (an action's first operation deploys it anyway). Answers `undefined` when it is deployed already.
   */
  async deployAccount(options: PollOptions & { readonly accountId?: string } = {}): Promise<UserOpReceipt | undefined> {
    const build = await this.call<UserOpBuild>("POST", "/account/rules/build", {
      intentType: "account_deploy",
      ...(options.accountId === undefined ? {} : { accountId: options.accountId })
    }).catch((e: unknown) => {
      if (e instanceof ApiError && e.status === 409) return undefined
      throw e
    })
    return build === undefined ? undefined : this.relay(build, options)
  }

  /** An audit entry's inclusion proof against the anchor on chain (409 until the entry is anchored). */
  proof(eventId: string): Promise<AuditProof> {
    return this.call("GET", `/activity/${encodeURIComponent(eventId)}/proof`)
  }

  // ---- asking for more ---------------------------------------------------------------

  /** Ask the owner to change the grant (new budget totals, per-action maximum, count, expiry, recipients); the owner decides. */
  askForMore(delegationId: string, changes: GrantChanges, reason: string): Promise<GrantChangeRequest> {
    return this.call("POST", "/approvals/changes", { delegationId, changes, reason })
  }

  /** One change request the agent asked (its status; `newDelegationId` once accepted). */
  changeRequest(changeId: string): Promise<GrantChangeRequest> {
    return this.call("GET", `/approvals/changes/${encodeURIComponent(changeId)}`)
  }

  changeRequests(q: { readonly status?: GrantChangeStatus } = {}): Promise<ReadonlyArray<GrantChangeRequest>> {
    return this.call("GET", `/approvals/changes${query({ status: q.status })}`)
  }

  /** Wait until a change request is settled (`accepted`, `declined` or `expired`). */
  async waitForChange(changeId: string, options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {}): Promise<GrantChangeRequest> {
    const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000)
    for (;;) {
      const change = await this.changeRequest(changeId)
      if (change.status === "accepted" || change.status === "declined" || change.status === "expired") return change
      if (Date.now() >= deadline) return change
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 1_000))
    }
  }

  // ---- asking for a new permission ---------------------------------------------------

  /**
   * Ask an owner this agent works for (an account that granted it before) for a NEW permission:
   * one ERC-7715 request, `from` the owner's account, `to` the agent (default: this client's key),
   * `permission.data.justification` saying why (required). Nothing is granted: the owner signs it
   * in the wallet or rejects it (`waitForPermission`).
   */
  askForPermission(request: Omit<PermissionRequest, "to"> & { readonly to?: Address }): Promise<PermissionAsk> {
    const to = request.to ?? this.address
    if (to === undefined) throw new Error("askForPermission needs `to` (the agent) when the client holds no key")
    return this.call("POST", "/permissions/asks", { request: { ...request, to } })
  }

  /** One permission ask of this agent, as it stands (`granted`: `grants[0].delegationId` and `permissions[0].context`). */
  permissionAsk(approvalId: string): Promise<PermissionAsk> {
    return this.call("GET", `/permissions/asks/${encodeURIComponent(approvalId)}`)
  }

  /** Wait until the owner answered an ask (`granted`, `rejected`, `expired`, `failed`), or the timeout. */
  async waitForPermission(approvalId: string, options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {}): Promise<PermissionAsk> {
    const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000)
    for (;;) {
      const ask = await this.permissionAsk(approvalId)
      if (ask.status !== "pending" && ask.status !== "approving") return ask
      if (Date.now() >= deadline) return ask
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 1_000))
    }
  }

  // ---- x402 payments under a grant ---------------------------------------------------

  /**
   * The x402 authorizer of a grant (`@das/x402-erc7710`): for each 402 it asks the service what
   * to sign (`POST /payments/x402`: checked against the grant, reserved against its budget) and
   * signs it with the agent's key. For a stock `@x402/fetch`:
   * `wrapFetchWithPayment(fetch, registerErc7710Client(new x402Client(), { scope, authorizer, maxAmount }))`.
   */
  x402Authorizer(delegationId: string, options: { readonly payer?: Address } = {}): PaymentAuthorizer {
    return serviceAuthorizer({
      baseUrl: this.baseUrl,
      token: this.token,
      delegationId,
      agent: this.requireSigner("sign a payment"),
      ...(options.payer === undefined ? {} : { payer: options.payer }),
      ...(this.fetchFn === undefined ? {} : { fetch: this.fetchFn })
    })
  }

  /**
   * A `fetch` that pays HTTP 402s under a grant: `pay(url, { maxAmount })` (base units of the
   * asset; a call without a ceiling pays nothing unless `defaultMaxAmount` is set). `scope`: the
   * chain and the tokens (addresses, decimals) the agent pays in; an offer outside it is refused
   * (`PaymentRefused`) before anything is signed, as is a payment the grant does not allow
   * (`PaymentRefused` field `grant`, the service's `declineReason` first in its message).
   */
  payingFetch(
    delegationId: string,
    options: { readonly scope: PayerScope; readonly payer?: Address; readonly defaultMaxAmount?: bigint }
  ): PayingFetch {
    return payingFetch({
      scope: options.scope,
      authorizer: this.x402Authorizer(delegationId, options.payer === undefined ? {} : { payer: options.payer }),
      ...(options.defaultMaxAmount === undefined ? {} : { defaultMaxAmount: options.defaultMaxAmount }),
      ...(this.fetchFn === undefined ? {} : { fetch: this.fetchFn })
    })
  }

  /** The x402 payments under the agent's grants (or one grant), newest first: authorized, settled, expired. */

  payments(q: { readonly delegationId?: string; readonly status?: X402PaymentStatus } = {}): Promise<ReadonlyArray<X402Payment>> {
    return this.call("GET", `/payments/x402${query({ delegationId: q.delegationId, status: q.status })}`)
  }

  payment(paymentId: string): Promise<X402Payment> {
    return this.call("GET", `/payments/x402/${encodeURIComponent(paymentId)}`)
  }

  /** End the session (`DELETE /auth/session`). */
  async signOut(): Promise<void> {
    await this.call("DELETE", "/auth/session")
  }

  private requireSigner(what: string): AgentSigner {
    if (this.signer === undefined) throw new Error(`this client holds no key to ${what}`)
    return this.signer
  }
}

/** Sign in with a key: the service's session (its bearer and the signer's accounts). */
export const signInWith = async (options: ConnectOptions, signer: Pick<AgentSigner, "address" | "signMessage">): Promise<Session> => {
  const nonce = await callService<SignInNonce>(options, "POST", "/auth/nonce")
  const message = signInMessage(signer, nonce)
  const signature = await signer.signMessage({ message })
  return callService<Session>(options, "POST", "/auth/session", { message, signature })
}
