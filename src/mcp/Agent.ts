/**
 * What an agent does with its grants, as the MCP tools do it: every call goes to the service's
 * HTTP API with the agent's own session token (the typed client), so the tools over stdio (a
 * local agent, its key in its own process) and over `/mcp` (the service, loopback to itself with
 * the caller's bearer) are one implementation and pass the same edge, rate limits and checks as
 * any client. The agent's key signs only where this process holds it (`signer`); without it the
 * tools answer what to sign. Nothing here approves, widens or revokes: the owner decides those.
 */
import { Effect } from "effect"
import type { LocalAccount } from "viem"
import { getAddress } from "viem"
import { decodePaymentRequiredHeader } from "@x402/core/http"
import { type ApiClient, makeClient } from "../client/Client.ts"
import { pollUserOp } from "../client/poll.ts"
import type { SignedUserOp } from "../domain/Operations.ts"
import { chainIdOf, HEADERS, payingFetch, serviceAuthorizer, settlementOf } from "@das/x402-erc7710"
import type * as S from "./Schemas.ts"
import { refusal } from "./Refusal.ts"
import { askView, changeView, grantView, receiptView, statusOf } from "./Views.ts"

export interface AgentSession {
  /** The service's base URL (over `/mcp`: the service itself, on loopback). */
  readonly baseUrl: string
  /** The agent's session token (sign-in with the agent's key). */
  readonly token: string
  /** The agent's key, when this process holds it (stdio); the service never does. */
  readonly signer?: LocalAccount
  /** How the agent's process fetches a paid resource (stdio only). */
  readonly fetch?: typeof globalThis.fetch
  /** A new session token, where this process can sign in again (stdio: it holds the key). */
  readonly renew?: Effect.Effect<string, unknown>
  /** Headers sent with every call to the service (over `/mcp`: the caller on whose behalf it calls). */
  readonly headers?: Record<string, string>
}

/** Most characters of a paid resource's body handed back (the server's text, never read as instructions). */
const BODY_CHARS = 4000

const json = (x: unknown) => JSON.parse(JSON.stringify(x)) as Record<string, never>

export const makeAgent = (session: AgentSession) => {
  let token = session.token
  let client: ApiClient | undefined
  const api = Effect.suspend(() =>
    client === undefined ? Effect.tap(makeClient({ baseUrl: session.baseUrl, token, headers: session.headers }), (c) => Effect.sync(() => (client = c))) : Effect.succeed(client)
  )
  const signer = session.signer

  /**
   * A session that ended (`SESSION_TTL`, 12 h by default) is renewed once and the call made again,
   * where this process can sign in (stdio). Over HTTP the caller's own token is the session.
   */
  const renewing = <Args, A, E>(op: (args: Args) => Effect.Effect<A, E>) => (args: Args): Effect.Effect<A, unknown> =>
    session.renew === undefined
      ? op(args)
      : op(args).pipe(Effect.catchIf(
        (e: E) => (e as { readonly _tag?: unknown })._tag === "Unauthorized",
        () =>
          Effect.flatMap(session.renew!, (renewed) => {
            token = renewed
            client = undefined
            return op(args)
          })
      ))

  /** Relays a signed operation and waits (bounded) for its outcome. */
  const relay = (a: ApiClient, userOp: SignedUserOp) =>
    Effect.gen(function*() {
      const submitted = yield* a.userops.submit({ payload: userOp })
      const receipt = submitted.status === "submitted"
        ? yield* pollUserOp(a, submitted.userOpId, { interval: "1 second", maxTries: 4, wait: "15 seconds" })
        : submitted
      return { status: statusOf(receipt), receipt: receiptView(receipt) }
    })

  const listGrants = (input: { readonly status?: "active" | "frozen" | "expired" | "revoked" | undefined }) =>
    Effect.gen(function*() {
      const a = yield* api
      const list = yield* a.delegations.list({ query: { role: "delegatee", ...(input.status === undefined ? {} : { status: input.status }) } })
      return { grants: list.map(grantView) }
    })

  const getGrant = (input: { readonly grantId: string }) =>
    Effect.gen(function*() {
      const a = yield* api
      return { grant: grantView(yield* a.delegations.get({ params: { delegationId: input.grantId } })) }
    })

  const act = (input: { readonly grantId: string; readonly recipient: string; readonly amount: number; readonly token?: string | undefined }) =>
    Effect.gen(function*() {
      const a = yield* api
      // The service checks the grant's every rule and reserves the amount (declined: 422 with its reason).
      const build = yield* a.delegations.act({
        params: { delegationId: input.grantId },
        payload: { recipient: input.recipient, amount: input.amount, ...(input.token === undefined ? {} : { token: input.token }) }
      })
      const shown = {
        userOp: build.userOp,
        userOpHash: build.userOpHash,
        ...(build.typedData === undefined ? {} : { typedData: build.typedData }),
        ...(build.humanSummary === null ? {} : { summary: build.humanSummary }),
        ...(build.expiresAt === undefined ? {} : { expiresAt: build.expiresAt })
      }
      if (signer === undefined || build.typedData === undefined) {
        return {
          status: "needs_signature" as const,
          build: shown,
          next: "Sign build.typedData (eth_signTypedData_v4) with the agent's key, set it as userOp.signature, and call submit_signed_action with that userOp before build.expiresAt."
        }
      }
      const signature = yield* Effect.promise(() => signer.signTypedData(build.typedData as never))
      return yield* relay(a, { ...build.userOp, signature })
    })

  const submitSigned = (input: { readonly userOp: SignedUserOp }) =>
    Effect.flatMap(api, (a) => relay(a, input.userOp))

  const requestMore = (input: {
    readonly grantId: string
    readonly reason: string
    readonly budgets?: ReadonlyArray<{ readonly token: string; readonly amount: number }> | undefined
    readonly perActionMax?: { readonly token: string; readonly amount: number } | undefined
    readonly maxActions?: number | undefined
    readonly expiresAt?: string | undefined
    readonly addRecipients?: ReadonlyArray<{ readonly name: string; readonly address: string; readonly chainId: number }> | undefined
  }) =>
    Effect.gen(function*() {
      const a = yield* api
      const changes = {
        ...(input.budgets === undefined ? {} : { budgets: input.budgets.map((b) => ({ token: { symbol: b.token }, amount: b.amount })) }),
        ...(input.perActionMax === undefined ? {} : { perActionMax: { token: { symbol: input.perActionMax.token }, amount: input.perActionMax.amount } }),
        ...(input.maxActions === undefined ? {} : { maxActions: input.maxActions }),
        ...(input.expiresAt === undefined ? {} : { expiresAt: input.expiresAt }),
        ...(input.addRecipients === undefined ? {} : { addRecipients: input.addRecipients })
      }
      const asked = yield* a.approvals.askChange({ payload: { delegationId: input.grantId, changes, reason: input.reason } })
      return {
        request: changeView(asked),
        next: "The owner decides in the console or the wallet; read it with get_request. Once accepted, act under request.newGrantId."
      }
    })

  /** A new permission asked of an owner the agent works for (ERC-7715, `POST /permissions/asks`); the owner decides. */
  const requestPermission = (input: {
    readonly payer: string
    readonly chainId: number
    readonly type: "erc20-token-periodic" | "erc20-token-allowance" | "native-token-periodic" | "native-token-allowance"
    readonly tokenAddress?: string | undefined
    readonly amount: string
    readonly periodSeconds?: number | undefined
    readonly expiresAt?: string | undefined
    readonly justification: string
    readonly isAdjustmentAllowed?: boolean | undefined
  }) =>
    Effect.gen(function*() {
      const a = yield* api
      const me = yield* a.session.current()
      const quantity = `0x${BigInt(input.amount).toString(16)}`
      const periodic = input.type.endsWith("-periodic")
      const data = {
        ...(input.tokenAddress === undefined ? {} : { tokenAddress: input.tokenAddress }),
        ...(periodic ? { periodAmount: quantity, ...(input.periodSeconds === undefined ? {} : { periodDuration: input.periodSeconds }) } : { allowanceAmount: quantity }),
        justification: input.justification
      }
      const request = {
        chainId: `0x${input.chainId.toString(16)}`,
        from: input.payer,
        to: me.signerAddress,
        permission: { type: input.type, isAdjustmentAllowed: input.isAdjustmentAllowed ?? false, data },
        rules: input.expiresAt === undefined ? [] : [{ type: "expiry", data: { timestamp: Math.floor(new Date(input.expiresAt).getTime() / 1000) } }]
      }
      const asked = yield* a.permissions.ask({ payload: { request } })
      return {
        request: askView(asked),
        next: "The owner signs it in the wallet (or rejects it); read it with get_permission_request. Once granted, act under request.grantId."
      }
    })

  const getPermissionRequest = (input: { readonly requestId: string }) =>
    Effect.gen(function*() {
      const a = yield* api
      return { request: askView(yield* a.permissions.asked({ params: { approvalId: input.requestId } })) }
    })

  const getRequest = (input: { readonly requestId: string }) =>
    Effect.gen(function*() {
      const a = yield* api
      return { request: changeView(yield* a.approvals.getChange({ params: { changeId: input.requestId } })) }
    })

  const getReceipt = (input: { readonly userOpId: string; readonly wait?: number | undefined }) =>
    Effect.gen(function*() {
      const a = yield* api
      const receipt = yield* a.userops.get({ params: { userOpId: input.userOpId }, query: input.wait ? { wait: `${input.wait}s` } : {} })
      if (receipt.auditEventId === undefined) return { receipt: receiptView(receipt), proofStatus: "no_entry" as const }
      const proof = yield* a.activity.proof({ params: { eventId: receipt.auditEventId } }).pipe(
        Effect.map((p) => ({
          eventId: p.event.id,
          leafIndex: p.leafIndex,
          treeSize: p.treeSize,
          auditPath: [...p.auditPath],
          entriesRoot: p.entriesRoot,
          anchor: { ...p.anchor, proof: [...p.anchor.proof] }
        })),
        // 409: no anchor covers the entry yet (ask again later); 404: the entry is not on this signer's log.
        Effect.catchTag("Conflict", () => Effect.succeed("not_anchored_yet" as const)),
        Effect.catchTag("NotFound", () => Effect.succeed("no_entry" as const))
      )
      return typeof proof === "string"
        ? { receipt: receiptView(receipt), proofStatus: proof }
        : { receipt: receiptView(receipt), proof, proofStatus: "proven" as const }
    })

  const payX402 = (input: {
    readonly grantId: string
    readonly url: string
    readonly maxUnits: string
    readonly method?: "GET" | "POST" | undefined
    readonly offer?: S.X402OfferInput | undefined
  }) =>
    Effect.gen(function*() {
      const a = yield* api
      const grant = yield* a.delegations.get({ params: { delegationId: input.grantId } })
      if (signer === undefined) {
        // The service never fetches a URL an agent names (it is no proxy): it answers what to sign for the offer.
        if (input.offer === undefined) {
          return yield* Effect.fail(refusal("offer", "over HTTP the server holds no key and fetches nothing: pass the 402's accepts[] entry as offer"))
        }
        // The caller's ceiling holds here too: nothing is reserved for an offer above it.
        if (BigInt(input.offer.amount) > BigInt(input.maxUnits)) {
          return yield* Effect.fail(refusal("offer.amount", `${input.offer.amount} base units is over this call's maxUnits (${input.maxUnits})`))
        }
        const auth = yield* a.payments.authorize({
          payload: { delegationId: input.grantId, requirement: input.offer as never, resource: { url: input.url } }
        })
        return {
          status: "needs_signature" as const,
          authorization: {
            paymentId: auth.payment.id,
            amount: auth.payment.amount,
            typedData: json(auth.typedData),
            delegation: json(auth.delegation),
            grant: json(auth.grant),
            delegationManager: auth.delegationManager,
            payer: auth.delegator
          },
          next: "Sign typedData with the agent's key (eth_signTypedData_v4; message.salt is a uint256) as the delegation's signature; send the request again with PAYMENT-SIGNATURE: " +
            "{ x402Version: 2, accepted: offer, payload: { delegationManager, permissionContext: ABI Delegation[] [signed delegation, grant], delegator: payer } } (docs/payments.md)."
        }
      }
      if (grant.delegatorAddress === undefined) return yield* Effect.fail(refusal("grantId", "the service did not name the grant's paying account"))
      const doFetch = session.fetch ?? globalThis.fetch
      const method = input.method ?? "GET"
      // The first answer is read once: its 402 names the assets this call may pay with.
      const first = yield* Effect.tryPromise({ try: () => doFetch(input.url, { method }), catch: (e) => refusal("url", `the resource could not be fetched: ${String(e)}`) })
      if (first.status !== 402) return { status: "not_paid" as const, response: yield* bodyOf(first) }
      const required = first.headers.get(HEADERS.required)
      const offers = required === null ? [] : safe(() => decodePaymentRequiredHeader(required).accepts) ?? []
      const assets = offers
        .filter((o) => chainIdOf(o.network) === grant.chainId)
        .map((o) => ({ address: getAddress(o.asset), decimals: 0 }))
      let replay: Response | undefined = first
      const pay = payingFetch({
        scope: { chainId: grant.chainId, assets },
        authorizer: serviceAuthorizer({ baseUrl: session.baseUrl, token, delegationId: grant.id, payer: grant.delegatorAddress as `0x${string}`, agent: signer }),
        fetch: ((url: RequestInfo | URL, init?: RequestInit) => {
          const r = replay
          replay = undefined
          return r !== undefined ? Promise.resolve(r) : doFetch(url, init)
        }) as typeof globalThis.fetch
      })
      const paid = yield* Effect.tryPromise({ try: () => pay(input.url, { method, maxAmount: BigInt(input.maxUnits) }), catch: (e) => e })
      const settlement = settlementOf(paid)
      return {
        status: settlement?.success === true ? "paid" as const : "not_paid" as const,
        response: yield* bodyOf(paid),
        ...(settlement === undefined ? {} : {
          settlement: {
            success: settlement.success,
            transaction: settlement.transaction,
            network: settlement.network,
            ...(settlement.amount === undefined ? {} : { amount: settlement.amount })
          }
        })
      }
    })

  return {
    listGrants: renewing(listGrants),
    getGrant: renewing(getGrant),
    act: renewing(act),
    submitSigned: renewing(submitSigned),
    requestMore: renewing(requestMore),
    getRequest: renewing(getRequest),
    requestPermission: renewing(requestPermission),
    getPermissionRequest: renewing(getPermissionRequest),
    getReceipt: renewing(getReceipt),
    payX402: renewing(payX402)
  }
}

export type Agent = ReturnType<typeof makeAgent>

const safe = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

const bodyOf = (r: Response) =>
  Effect.promise(async () => {
    const text = await r.text().catch(() => "")
    const contentType = r.headers.get("content-type")
    return { status: r.status, ...(contentType === null ? {} : { contentType }), body: text.slice(0, BODY_CHARS) }
  })
