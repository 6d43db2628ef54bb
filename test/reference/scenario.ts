/**
 * The reference's examples as one story on the local chain: an owner and an agent sign in, the
 * owner's account is funded, a grant is made, the agent acts, the owner reads its activity, proof
 * and notifications, and revokes. Each step is one operation of `/openapi.json`.
 *
 * Recording (`npm run reference:record`): each step's request is made from this run's state and
 * the exchange is written to `src/reference/examples.json`. Checking (every test run): each
 * recorded request is sent again with the recorded run's ids replaced by this run's
 * (`bindings`), except signed bodies (`fresh`), which no second run can reuse: those are signed
 * anew and the recorded one is only checked against the schema.
 */
import { type LocalAccount } from "viem"
import { signInMessage } from "../../src/client/signIn.ts"

export type Bindings = Record<string, string>
export type As = "none" | "owner" | "agent"

export interface StepRequest {
  readonly params?: Record<string, string>
  readonly query?: Record<string, string>
  readonly body?: unknown
}

export interface Ctx {
  readonly baseUrl: string
  readonly owner: LocalAccount
  readonly agent: LocalAccount
  readonly tokens: Partial<Record<As, string>>
  readonly b: Bindings
  /** Publishes an anchor now (the service does it every ANCHOR_INTERVAL). */
  readonly anchorNow: () => Promise<void>
  /** The last answer of each operation, for later steps (a build to sign). */
  readonly answers: Record<string, any>
}

export interface Step {
  readonly op: string
  readonly as: As
  readonly request: (ctx: Ctx) => Promise<StepRequest> | StepRequest
  /** A signed body: sent as made now (a recorded signature cannot be replayed). */
  readonly fresh?: true
  /** The status the step expects when it is not a success (an operation that always refuses). */
  readonly expect?: number
  /** Server-sent events: the answer is the stream's head (status and content type). */
  readonly stream?: true
  /** Runs before the request (funding, waiting for the chain). */
  readonly before?: (ctx: Ctx) => Promise<void>
  /** Learns ids from the answer into the bindings. */
  readonly learn?: (body: any, ctx: Ctx) => Promise<void> | void
}

export const send = async (
  ctx: Ctx,
  method: string,
  path: string,
  as: As,
  req: StepRequest,
  stream = false
): Promise<{ status: number; body: unknown; contentType: string | null }> => {
  let url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(req.params?.[name] ?? `{${name}}`))
  if (req.query !== undefined && Object.keys(req.query).length > 0) url += `?${new URLSearchParams(req.query)}`
  const headers: Record<string, string> = {}
  const token = as === "none" ? undefined : ctx.tokens[as]
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  if (req.body !== undefined) headers["content-type"] = "application/json"
  if (stream) headers.accept = "text/event-stream"
  const controller = new AbortController()
  const res = await fetch(`${ctx.baseUrl}${url}`, {
    method: method.toUpperCase(),
    headers,
    signal: controller.signal,
    ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) })
  })
  const contentType = res.headers.get("content-type")
  if (stream) {
    controller.abort()
    return { status: res.status, body: undefined, contentType }
  }
  const text = await res.text()
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text), contentType }
}

const signTyped = (signer: LocalAccount, typedData: any) => signer.signTypedData!(typedData)
const signLeg = (signer: LocalAccount, typedData: any) =>
  signer.signTypedData!({ ...typedData, message: { ...typedData.message, salt: BigInt(typedData.message.salt) } })

/** Polls `f` until it answers true (the chain and the follower take a moment). */
export const until = async (what: string, f: () => Promise<boolean>, tries = 150) => {
  for (let i = 0; i < tries; i++) {
    if (await f()) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`timed out waiting for ${what}`)
}

const signInBody = async (ctx: Ctx, signer: LocalAccount) => {
  const nonce = (await send(ctx, "post", "/auth/nonce", "none", {})).body as any
  const message = signInMessage(signer, nonce)
  return { message, signature: await signer.signMessage({ message }) }
}

const waitSettled = async (ctx: Ctx, as: As, userOpId: string) => {
  await until(`user operation ${userOpId}`, async () => {
    const r = await send(ctx, "get", "/userops/{userOpId}", as, { params: { userOpId } })
    return (r.body as any)?.status !== "submitted"
  })
}

/** The story, in order. Every operation of the core groups appears once. */
export const steps: ReadonlyArray<Step> = [
  { op: "live", as: "none", request: () => ({}) },
  { op: "ready", as: "none", request: () => ({}) },
  { op: "auth.nonce", as: "none", request: () => ({}) },
  {
    op: "auth.signIn",
    as: "none",
    fresh: true,
    request: (ctx) => signInBody(ctx, ctx.owner).then((body) => ({ body })),
    learn: async (body, ctx) => {
      ctx.tokens.owner = body.token
      ctx.b.ownerAddress = body.signerAddress
      ctx.b.ownerAccountId = body.accounts[0].id
      ctx.b.ownerAccount = body.accounts[0].address
      // The agent signs in the same way (its own session; its account receives nothing here).
      const agent = (await send(ctx, "post", "/auth/session", "none", { body: await signInBody(ctx, ctx.agent) })).body as any
      ctx.tokens.agent = agent.token
      ctx.b.agentAddress = agent.signerAddress
      ctx.b.agentAccount = agent.accounts[0].address
    }
  },
  { op: "session.current", as: "owner", request: () => ({}) },
  { op: "accounts.listAccounts", as: "owner", request: () => ({}) },
  { op: "accounts.createAccount", as: "owner", request: () => ({ body: { label: "savings", chainId: 31337 } }) },
  { op: "accounts.listDevices", as: "owner", request: (ctx) => ({ query: { accountId: ctx.b.ownerAccountId! } }) },
  { op: "accounts.getRules", as: "owner", request: (ctx) => ({ query: { accountId: ctx.b.ownerAccountId! } }) },
  {
    op: "notifications.createWebhook",
    as: "owner",
    request: (ctx) => ({ body: { url: ctx.b.webhookUrl } }),
    learn: (body, ctx) => {
      ctx.b.endpointId = body.id
    }
  },
  { op: "notifications.listWebhooks", as: "owner", request: () => ({}) },
  {
    op: "dev.faucet",
    as: "owner",
    request: (ctx) => ({ body: { address: ctx.b.ownerAccount, token: "USDC", amount: 100 } })
  },
  {
    op: "delegations.build",
    as: "owner",
    request: (ctx) => ({
      body: {
        name: "Groceries agent",
        kind: "agent",
        delegateeAddress: ctx.b.agentAccount,
        chainId: 31337,
        budgets: [{ token: { symbol: "USDC" }, amount: 50, period: { every: "week" } }],
        perActionMax: { token: { symbol: "USDC" }, amount: 20 },
        maxActions: 10,
        recipientAllowlist: [{ name: "shop", address: "0x00000000000000000000000000000000000005a1", chainId: 31337 }]
      }
    })
  },
  {
    op: "delegations.create",
    as: "owner",
    fresh: true,
    request: async (ctx) => {
      const build = ctx.answers["delegations.build"]
      const leg = build.delegations[0]
      return {
        body: {
          userOp: { ...build.enableUserOp, signature: await signTyped(ctx.owner, build.typedData) },
          userOpHash: build.userOpHash,
          intentType: "delegation_enable",
          delegationSignatures: [{ permissionId: leg.permissionId, signature: await signLeg(ctx.owner, leg.typedData) }]
        }
      }
    },
    learn: (body, ctx) => {
      ctx.b.delegationId = body.id
    }
  },
  { op: "delegations.list", as: "owner", request: () => ({ query: { status: "active" } }) },
  { op: "delegations.get", as: "owner", request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  { op: "delegations.policySnapshots", as: "owner", request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  { op: "delegations.freeze", as: "owner", expect: 400, request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  { op: "delegations.unfreeze", as: "owner", expect: 400, request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  {
    op: "delegations.act",
    as: "agent",
    request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! }, body: { recipient: "shop", amount: 12.5 } })
  },
  {
    op: "userops.submit",
    as: "agent",
    fresh: true,
    request: async (ctx) => {
      const build = ctx.answers["delegations.act"]
      return { body: { ...build.userOp, signature: await signTyped(ctx.agent, build.typedData) } }
    },
    learn: async (body, ctx) => {
      ctx.b.userOpId = body.userOpId
      await waitSettled(ctx, "agent", body.userOpId)
    }
  },
  { op: "userops.get", as: "agent", request: (ctx) => ({ params: { userOpId: ctx.b.userOpId! } }) },
  {
    op: "activity.list",
    as: "owner",
    request: (ctx) => ({ query: { delegationId: ctx.b.delegationId!, limit: "5" } }),
    learn: (body, ctx) => {
      ctx.b.eventId = body.items[0].id
    }
  },
  { op: "activity.get", as: "owner", request: (ctx) => ({ params: { eventId: ctx.b.eventId! } }) },
  {
    op: "activity.anchor",
    as: "owner",
    before: (ctx) =>
      until("an anchor covering the entry", async () => {
        await ctx.anchorNow()
        const r = await send(ctx, "get", "/activity/{eventId}/proof", "owner", { params: { eventId: ctx.b.eventId! } })
        return r.status === 200
      }),
    request: () => ({})
  },
  { op: "activity.proof", as: "owner", request: (ctx) => ({ params: { eventId: ctx.b.eventId! } }) },
  {
    op: "notifications.list",
    as: "owner",
    request: () => ({ query: { unreadOnly: "true" } }),
    learn: (body, ctx) => {
      ctx.b.notificationId = body[0].id
    }
  },
  { op: "notifications.stream", as: "owner", stream: true, request: () => ({}) },
  { op: "notifications.markRead", as: "owner", request: (ctx) => ({ params: { notificationId: ctx.b.notificationId! } }) },
  { op: "notifications.readAll", as: "owner", request: () => ({}) },
  {
    op: "notifications.webhookDeliveries",
    as: "owner",
    before: (ctx) =>
      until("a webhook delivery", async () => {
        const r = await send(ctx, "get", "/notifications/webhooks/{endpointId}/deliveries", "owner", { params: { endpointId: ctx.b.endpointId! } })
        return Array.isArray(r.body) && r.body.length > 0
      }),
    request: (ctx) => ({ params: { endpointId: ctx.b.endpointId! } }),
    learn: (body, ctx) => {
      ctx.b.deliveryId = body[0].id
    }
  },
  { op: "notifications.replayWebhookDelivery", as: "owner", request: (ctx) => ({ params: { deliveryId: ctx.b.deliveryId! } }) },
  { op: "notifications.rotateWebhookSecret", as: "owner", request: (ctx) => ({ params: { endpointId: ctx.b.endpointId! } }) },
  { op: "notifications.deleteWebhook", as: "owner", request: (ctx) => ({ params: { endpointId: ctx.b.endpointId! } }) },
  { op: "accounts.buildRules", as: "owner", request: (ctx) => ({ body: { intentType: "account_freeze", accountId: ctx.b.ownerAccountId! } }) },
  { op: "delegations.revoke", as: "owner", request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  { op: "session.signOut", as: "owner", request: () => ({}) }
]
