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
import { createPublicClient, http, type LocalAccount, parseEventLogs } from "viem"
import { agentCommerceAbi } from "../../src/chain/contracts/AgentCommerce.ts"
import { signInMessage } from "../../src/client/signIn.ts"
import { agentFixture, approve, type FakeUpstream as MarketplaceUpstream, wallet } from "../marketplace/FakeUpstream.ts"

export type Bindings = Record<string, string>
export type As = "none" | "owner" | "agent" | "panic" | "guardian"

export interface StepRequest {
  readonly params?: Record<string, string>
  readonly query?: Record<string, string>
  readonly body?: unknown
}

export interface Ctx {
  readonly baseUrl: string
  readonly owner: LocalAccount
  readonly agent: LocalAccount
  /** A trusted contact's key the owner makes its panic key (it signs in with its own session); the panic steps need it. */
  readonly panic?: LocalAccount
  /** A trusted contact's key the owner makes a guardian of its account (it signs in with its own session); the guardian steps need it. */
  readonly guardian?: LocalAccount
  readonly tokens: Partial<Record<As, string>>
  readonly b: Bindings
  /** Publishes an anchor now (the service does it every ANCHOR_INTERVAL). */
  readonly anchorNow: () => Promise<void>
  /** The last answer of each operation, for later steps (a build to sign). */
  readonly answers: Record<string, any>
  /**
   * The marketplace's upstream: the loopback stand-in the marketplace tests use (test/marketplace/FakeUpstream.ts),
   * which the story fills (agents, a job it indexed) and on which the person approves a managed wallet's connection.
   * The marketplace and hiring steps need it (the launchpad's upstream needs nothing from the story).
   */
  readonly marketplace?: MarketplaceUpstream
}

export interface Step {
  readonly op: string
  readonly as: As
  readonly request: (ctx: Ctx) => Promise<StepRequest> | StepRequest
  /**
   * Sent as made now: a signed body (a recorded signature cannot be replayed), or one naming what only this run's
   * chain numbers (a job's id: a short number no binding could replace safely).
   */
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

/** An approver's `eth_signTypedData_v4` of an approval request's `toSign` (uint256s read as bigints, as a wallet does). */
const signApproval = (signer: LocalAccount, toSign: any) =>
  signer.signTypedData!({
    domain: toSign.domain,
    types: { Approval: toSign.types.Approval.map((f: any) => ({ name: f.name, type: f.type })) },
    primaryType: "Approval",
    message: { ...toSign.message, value: BigInt(toSign.message.value), nonce: BigInt(toSign.message.nonce), deadline: BigInt(toSign.message.deadline) }
  })

/** The agent asks for a transfer above the grant's threshold: no build, an approval request (422 `approval_required`). */
const askApproval = async (ctx: Ctx, amount: number): Promise<string> => {
  const r = await send(ctx, "post", "/delegations/{delegationId}/actions", "agent", {
    params: { delegationId: ctx.b.delegationId! },
    body: { recipient: "shop", amount }
  })
  const body = (r.body as any)?.error
  if (r.status !== 422 || body?.declineReason !== "approval_required") throw new Error(`expected approval_required: ${r.status} ${JSON.stringify(body)}`)
  return body.details.approvalId
}

const signerOf = (ctx: Ctx, as: Exclude<As, "none">): LocalAccount => {
  const signer = as === "owner" ? ctx.owner : as === "agent" ? ctx.agent : as === "panic" ? ctx.panic : ctx.guardian
  if (signer === undefined) throw new Error(`no ${as} key`)
  return signer
}

/** Signs a build's operation (`userOp`, or a grant's `enableUserOp`) as `signer` and relays it (POST /userops) until it is mined; the receipt. */
const relay = async (ctx: Ctx, as: Exclude<As, "none">, build: any): Promise<any> => {
  const signer = signerOf(ctx, as)
  const op = build.userOp ?? build.enableUserOp
  const r = await send(ctx, "post", "/userops", as, { body: { ...op, signature: await signTyped(signer, build.typedData) } })
  if (r.status >= 300) throw new Error(`relay: ${r.status} ${JSON.stringify(r.body)}`)
  const settled = await waitSettled(ctx, as, (r.body as any).userOpId)
  if (settled.outcome !== "mined") throw new Error(`relay: ${JSON.stringify(settled)}`)
  return settled
}

const upstreamOf = (ctx: Ctx): MarketplaceUpstream => {
  if (ctx.marketplace === undefined) throw new Error("the marketplace steps need its upstream")
  return ctx.marketplace
}

/** The job the local ACP contract numbered, read from the transaction's `JobCreated` log (what the chain shows). */
const createdJob = async (ctx: Ctx, transactionHash: `0x${string}`): Promise<string> => {
  const client = createPublicClient({ transport: http(ctx.answers["dev.networks"][0].rpcUrl) })
  const receipt = await client.getTransactionReceipt({ hash: transactionHash })
  const [created] = parseEventLogs({ abi: agentCommerceAbi, eventName: "JobCreated", logs: receipt.logs })
  if (created === undefined) throw new Error(`no JobCreated in ${transactionHash}`)
  return created.args.jobId.toString()
}

/** The marketplace agent the owner hires (a provider of the upstream's index; its wallet needs no key here). */
const hiredAgent = wallet(0xa6e7)

/** A facilitator's settlement address (no facilitator runs here: authorizing a payment needs none). */
const facilitator = "0x00000000000000000000000000000000000fac17"

/** Polls the user operation until it settles; its last receipt. */
const waitSettled = async (ctx: Ctx, as: As, userOpId: string): Promise<any> => {
  let last: any
  await until(`user operation ${userOpId}`, async () => {
    last = (await send(ctx, "get", "/userops/{userOpId}", as, { params: { userOpId } })).body
    return last?.status !== "submitted"
  })
  return last
}

/** The owner's signed grant: the enable operation and the delegation (POST /delegations's body, or an accept's). */
const signGrant = async (ctx: Ctx, build: any) => {
  const leg = build.delegations[0]
  return {
    userOp: { ...build.enableUserOp, signature: await signTyped(ctx.owner, build.typedData) },
    userOpHash: build.userOpHash,
    delegationSignatures: [{ permissionId: leg.permissionId, signature: await signLeg(ctx.owner, leg.typedData) }]
  }
}

/** The owner builds, signs and enables a grant to the agent's account; its id. */
const enableGrant = async (ctx: Ctx, request: Record<string, unknown>): Promise<string> => {
  const build = await send(ctx, "post", "/delegations/build", "owner", { body: request })
  if (build.status >= 300) throw new Error(`grant build: ${build.status} ${JSON.stringify(build.body)}`)
  const created = await send(ctx, "post", "/delegations", "owner", {
    body: { ...(await signGrant(ctx, build.body)), intentType: "delegation_enable" }
  })
  if (created.status >= 300) throw new Error(`grant: ${created.status} ${JSON.stringify(created.body)}`)
  return (created.body as any).id
}

/** Signs in `signer` (its own session); the sign-in's answer. */
const signIn = async (ctx: Ctx, signer: LocalAccount): Promise<any> => {
  const r = await send(ctx, "post", "/auth/session", "none", { body: await signInBody(ctx, signer) })
  if (r.status >= 300) throw new Error(`sign-in: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

/** The agent asks to change a grant (raising its total): the request's id. */
const askChange = async (ctx: Ctx, delegationId: string, amount: number, reason: string): Promise<string> => {
  const r = await send(ctx, "post", "/approvals/changes", "agent", {
    body: { delegationId, reason, changes: { budgets: [{ token: { symbol: "USDC" }, amount }] } }
  })
  if (r.status !== 201) throw new Error(`change request: ${r.status} ${JSON.stringify(r.body)}`)
  return (r.body as any).id
}

/** An approver named in the owner's grant who does not sign in here (its notifications go to a webhook). */
const cosigner = "0x0000000000000000000000000000000000c0516e"

/** The owner's new key a guardian approves (a lost phone's replacement; the recovery is built, never started here). */
const recoveredKey = "0x00000000000000000000000000000000000e1e55"

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
    op: "accounts.getFunding",
    as: "owner",
    request: (ctx) => ({ query: { accountId: ctx.b.ownerAccountId!, token: "USDC", amount: "100" } })
  },
  {
    op: "dev.faucet",
    as: "owner",
    request: (ctx) => ({ body: { address: ctx.b.ownerAccount, token: "USDC", amount: 100 } })
  },
  {
    op: "dev.networks",
    as: "owner",
    request: () => ({}),
    learn: (body, ctx) => {
      ctx.b.usdc = body[0].tokens.usd.address
    }
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
        recipientAllowlist: [{ name: "shop", address: "0x00000000000000000000000000000000000005a1", chainId: 31337 }],
        // Above 15 USDC a transfer waits for one approval: the owner's key, or a cosigner's (told by a webhook).
        approval: { required: 1, approvers: [ctx.b.ownerAddress, cosigner], thresholds: [{ token: { symbol: "USDC" }, amount: 15 }] }
      }
    })
  },
  {
    op: "delegations.create",
    as: "owner",
    fresh: true,
    request: async (ctx) => ({ body: { ...(await signGrant(ctx, ctx.answers["delegations.build"])), intentType: "delegation_enable" } }),
    learn: (body, ctx) => {
      ctx.b.delegationId = body.id
    }
  },
  { op: "delegations.list", as: "owner", request: () => ({ query: { status: "active" } }) },
  { op: "delegations.get", as: "owner", request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  { op: "delegations.policySnapshots", as: "owner", request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  {
    // An AP2 open Payment Mandate the agent holds, built into a grant for the owner to sign (docs/ap2.md).
    op: "ap2.buildPaymentMandate",
    as: "owner",
    request: (ctx) => ({
      body: {
        mandate: {
          vct: "mandate.payment.open.1",
          constraints: [
            { type: "payment.amount_range", currency: "USD", max: 2500 },
            { type: "payment.budget", currency: "USD", max: 100 },
            { type: "payment.agent_recurrence", frequency: "WEEKLY", max_occurrences: 4 },
            { type: "payment.allowed_payees", allowed: [{ id: "0x00000000000000000000000000000000000005a1", name: "shop" }] },
            { type: "payment.reference", conditional_transaction_id: "FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8" }
          ],
          cnf: { jwk: { kty: "EC", crv: "P-256", x: "QpSyxPQHy38xckypDr54gZ3T42zj9iLtV4koyb5U27c", y: "37HLd7JJinxjJIn8J7HijssoeclbfhdW-gUL7feI9lw" } }
        },
        delegateeAddress: ctx.b.agentAccount,
        chainId: 31337
      }
    })
  },
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
    op: "delegations.redemptions",
    as: "owner",
    before: (ctx) =>
      until("the follower's record of the redemption", async () => {
        const r = await send(ctx, "get", "/delegations/{delegationId}/redemptions", "owner", { params: { delegationId: ctx.b.delegationId! } })
        return Array.isArray(r.body) && r.body.length > 0
      }),
    request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } })
  },
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
  // Above the grant's threshold: the agent's 18 USDC waits for the owner's approval, then is built and relayed.
  {
    op: "approvals.list",
    as: "owner",
    before: async (ctx) => {
      ctx.b.approvalId = await askApproval(ctx, 18)
    },
    request: () => ({ query: { status: "pending" } })
  },
  { op: "approvals.get", as: "owner", request: (ctx) => ({ params: { approvalId: ctx.b.approvalId! } }) },
  {
    op: "approvals.approve",
    as: "owner",
    fresh: true,
    request: async (ctx) => ({
      params: { approvalId: ctx.b.approvalId! },
      body: { signature: await signApproval(ctx.owner, ctx.answers["approvals.get"].toSign) }
    })
  },
  {
    op: "approvals.build",
    as: "agent",
    request: (ctx) => ({ params: { approvalId: ctx.b.approvalId! } }),
    learn: (body, ctx) => relay(ctx, "agent", body)
  },
  {
    op: "approvals.deny",
    as: "owner",
    before: async (ctx) => {
      ctx.b.deniedApprovalId = await askApproval(ctx, 16)
    },
    request: (ctx) => ({ params: { approvalId: ctx.b.deniedApprovalId! }, body: { reason: "Not this week" } })
  },
  // The cosigner does not sign in here: the owner gives it a webhook for the approval requests that name it.
  {
    op: "approvals.addContact",
    as: "owner",
    request: (ctx) => ({ body: { approver: cosigner, url: ctx.b.webhookUrl } }),
    learn: (body, ctx) => {
      ctx.b.contactId = body.id
    }
  },
  { op: "approvals.listContacts", as: "owner", request: () => ({}) },
  { op: "approvals.removeContact", as: "owner", request: (ctx) => ({ params: { contactId: ctx.b.contactId! } }) },
  // Asking for more: under a grant with a fixed (not renewing) budget, the agent asks for a higher total; the owner
  // reads the difference, signs the one replacement operation and accepts it; a second request is declined.
  {
    op: "approvals.askChange",
    as: "agent",
    before: async (ctx) => {
      ctx.b.suppliesGrantId = await enableGrant(ctx, {
        name: "Office supplies",
        kind: "agent",
        delegateeAddress: ctx.b.agentAccount,
        chainId: 31337,
        budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 10 },
        maxActions: 5,
        recipientAllowlist: [{ name: "shop", address: "0x00000000000000000000000000000000000005a1", chainId: 31337 }]
      })
    },
    request: (ctx) => ({
      body: {
        delegationId: ctx.b.suppliesGrantId!,
        reason: "The supplier raised its prices",
        changes: { budgets: [{ token: { symbol: "USDC" }, amount: 20 }], maxActions: 8 }
      }
    }),
    learn: (body, ctx) => {
      ctx.b.changeId = body.id
    }
  },
  { op: "approvals.listChanges", as: "owner", request: () => ({ query: { status: "pending" } }) },
  { op: "approvals.getChange", as: "owner", request: (ctx) => ({ params: { changeId: ctx.b.changeId! } }) },
  { op: "approvals.buildChange", as: "owner", request: (ctx) => ({ params: { changeId: ctx.b.changeId! } }) },
  {
    op: "approvals.acceptChange",
    as: "owner",
    fresh: true,
    request: async (ctx) => ({ params: { changeId: ctx.b.changeId! }, body: await signGrant(ctx, ctx.answers["approvals.buildChange"]) }),
    learn: (body, ctx) => {
      ctx.b.suppliesReplacementId = body.newDelegationId
    }
  },
  {
    op: "approvals.declineChange",
    as: "owner",
    before: async (ctx) => {
      ctx.b.declinedChangeId = await askChange(ctx, ctx.b.suppliesReplacementId!, 30, "And a little more")
    },
    request: (ctx) => ({ params: { changeId: ctx.b.declinedChangeId! }, body: { reason: "20 USDC is enough this month" } })
  },
  // An x402 payment under a grant of its own to the agent's key, the facilitator a named redeemer.
  {
    op: "payments.authorize",
    as: "agent",
    before: async (ctx) => {
      ctx.b.paymentGrantId = await enableGrant(ctx, {
        name: "Paid APIs",
        kind: "agent",
        delegateeAddress: ctx.b.agentAddress,
        chainId: 31337,
        budgets: [{ token: { symbol: "USDC" }, amount: 5, period: { every: "day" } }],
        perActionMax: { token: { symbol: "USDC" }, amount: 1 },
        maxActions: 100,
        redeemers: { mode: "named", addresses: [facilitator] }
      })
    },
    request: (ctx) => ({
      body: {
        delegationId: ctx.b.paymentGrantId!,
        requirement: {
          scheme: "exact",
          network: "eip155:31337",
          asset: ctx.b.usdc!,
          amount: "10000",
          payTo: "0x00000000000000000000000000000000000005a1",
          maxTimeoutSeconds: 60,
          extra: { assetTransferMethod: "erc7710", facilitatorAddress: facilitator }
        },
        resource: { url: "https://api.example/report", description: "Today's report", mimeType: "application/json" }
      }
    }),
    learn: (body, ctx) => {
      ctx.b.paymentId = body.payment.id
    }
  },
  { op: "payments.list", as: "owner", request: (ctx) => ({ query: { delegationId: ctx.b.paymentGrantId! } }) },
  { op: "payments.get", as: "agent", request: (ctx) => ({ params: { paymentId: ctx.b.paymentId! } }) },
  // ERC-7715: a dApp asks for a periodic USDC permission for the agent; the owner's wallet approves it, then a revoke is rejected.
  { op: "permissions.supported", as: "owner", request: () => ({}) },
  {
    op: "permissions.rpc",
    as: "owner",
    request: () => ({ body: { jsonrpc: "2.0", id: 1, method: "wallet_getSupportedExecutionPermissions", params: [] } })
  },
  {
    op: "permissions.request",
    as: "owner",
    request: (ctx) => ({
      body: {
        requests: [{
          chainId: "0x7a69",
          to: ctx.b.agentAccount,
          permission: {
            type: "erc20-token-periodic",
            isAdjustmentAllowed: false,
            data: { tokenAddress: ctx.b.usdc, periodAmount: "0x4c4b40", periodDuration: 86400, justification: "Daily groceries" }
          },
          rules: []
        }]
      }
    }),
    learn: (body, ctx) => {
      ctx.b.permissionApprovalId = body.id
    }
  },
  { op: "permissions.approvals", as: "owner", request: () => ({ query: { status: "pending" } }) },
  { op: "permissions.approval", as: "owner", request: (ctx) => ({ params: { approvalId: ctx.b.permissionApprovalId! } }) },
  {
    op: "permissions.approve",
    as: "owner",
    fresh: true,
    request: async (ctx) => {
      const approval = ctx.answers["permissions.approval"]
      const signatures = await Promise.all(approval.grants.map(async (g: any) => ({
        userOp: { ...g.build.enableUserOp, signature: await signTyped(ctx.owner, g.build.typedData) },
        userOpHash: g.build.userOpHash,
        delegationSignatures: await Promise.all(
          g.build.delegations.map(async (leg: any) => ({ permissionId: leg.permissionId, signature: await signLeg(ctx.owner, leg.typedData) }))
        )
      })))
      return { params: { approvalId: ctx.b.permissionApprovalId! }, body: { signatures } }
    },
    learn: (body, ctx) => {
      ctx.b.permissionContext = body.permissions[0].context
    }
  },
  { op: "permissions.granted", as: "owner", request: () => ({}) },
  {
    op: "permissions.revoke",
    as: "owner",
    request: (ctx) => ({ body: { permissionContext: ctx.b.permissionContext! } }),
    learn: (body, ctx) => {
      ctx.b.revokeApprovalId = body.id
    }
  },
  { op: "permissions.reject", as: "owner", request: (ctx) => ({ params: { approvalId: ctx.b.revokeApprovalId! } }) },
  // The agent asks the owner it works for for a new permission; it lands as the owner's approval (issue 43).
  {
    op: "permissions.ask",
    as: "agent",
    request: (ctx) => ({
      body: {
        request: {
          chainId: "0x7a69",
          from: ctx.b.ownerAccount,
          to: ctx.b.agentAccount,
          permission: {
            type: "erc20-token-periodic",
            isAdjustmentAllowed: false,
            data: { tokenAddress: ctx.b.usdc, periodAmount: "0x4c4b40", periodDuration: 86400, justification: "Data feeds for the research task" }
          },
          rules: []
        }
      }
    }),
    learn: (body, ctx) => {
      ctx.b.permissionAskId = body.id
    }
  },
  { op: "permissions.asked", as: "agent", request: (ctx) => ({ params: { approvalId: ctx.b.permissionAskId! } }) },
  // The marketplace (its upstream on loopback): live stats, agents, the managed wallet connected by its person.
  {
    op: "marketplaceStream.stream",
    as: "none",
    before: async (ctx) => {
      const upstream = upstreamOf(ctx)
      upstream.state.agents.push(agentFixture(0xa6e7, 1_000, { name: "Filings Analyst", description: "Summarises company filings" }))
      upstream.state.agents.push(agentFixture(0xb0b, 400, { name: "Market Watcher", description: "Watches token markets" }))
      // A job the upstream indexed on Base, of the owner's account (jobs of the local chain are read from the chain).
      upstream.state.jobs.push({
        id: 901,
        onChainJobId: 7,
        chainId: 8453,
        phase: 2,
        description: "Summarise the Q3 filings",
        offeringName: "offer-42727",
        providerName: "Filings Analyst",
        clientAddress: ctx.b.ownerAccount,
        providerAddress: hiredAgent,
        evaluatorAddress: wallet(0xe7a1),
        price: "12.5",
        createdAt: "2026-03-01T00:00:00Z",
        memos: []
      })
    },
    request: () => ({ query: { wallets: hiredAgent } })
  },
  { op: "marketplace.listAgents", as: "owner", request: () => ({ query: { limit: "2" } }) },
  { op: "marketplace.evaluator", as: "owner", request: () => ({}) },
  { op: "marketplace.searchAgents", as: "owner", request: () => ({ query: { query: "filings", topK: "3" } }) },
  { op: "marketplace.getAgent", as: "owner", request: () => ({ params: { wallet: hiredAgent } }) },
  { op: "marketplace.managedConnection", as: "owner", request: () => ({}) },
  {
    op: "marketplace.managedConnect",
    as: "owner",
    request: () => ({}),
    // The person approves at the upstream's login page (here: the stand-in told so).
    learn: (body, ctx) => {
      ctx.b.managedRequestId = body.requestId
      approve(upstreamOf(ctx).state, body.requestId, wallet(0x3a3a))
    }
  },
  { op: "marketplace.managedConnectStatus", as: "owner", request: (ctx) => ({ query: { requestId: ctx.b.managedRequestId! } }) },
  // Hiring on the local ACP contract: a mandate to the agent's runtime, a job created and funded under it.
  {
    op: "hiring.hireBuild",
    as: "owner",
    request: (ctx) => ({ body: { agentWallet: hiredAgent, chainId: 31337, perJobBudget: 25, delegateeAddress: ctx.b.agentAccount } }),
    learn: async (body, ctx) => {
      ctx.b.mandateId = body.mandateId
      await relay(ctx, "owner", body)
    }
  },
  // The owner's hire policy stays off here (the story's agent is not an ERC-8004 agent): test/hiring/namedAgent.test.ts turns it on.
  { op: "hiring.setHirePolicy", as: "owner", request: () => ({ body: { requireRegistered: false } }) },
  { op: "hiring.getHirePolicy", as: "owner", request: () => ({}) },
  { op: "hiring.listMandates", as: "owner", request: () => ({}) },
  {
    op: "hiring.createJobBuild",
    as: "owner",
    request: (ctx) => ({ body: { mandateId: ctx.b.mandateId!, agentWallet: hiredAgent, description: "Summarise the Q4 filings", chainId: 31337 } }),
    learn: async (body, ctx) => {
      const mined = await relay(ctx, "owner", body)
      ctx.answers.jobId = await createdJob(ctx, mined.transactionHash)
    }
  },
  {
    op: "hiring.fundJobBuild",
    as: "owner",
    fresh: true,
    request: (ctx) => ({ body: { mandateId: ctx.b.mandateId!, jobId: ctx.answers.jobId, perJobBudget: 10, chainId: 31337 } }),
    learn: (body, ctx) => relay(ctx, "owner", body)
  },
  { op: "marketplace.listJobs", as: "owner", request: () => ({}) },
  { op: "marketplace.getJob", as: "owner", fresh: true, request: (ctx) => ({ params: { chainId: "31337", jobId: ctx.answers.jobId } }) },
  {
    op: "hiring.managedDepositBuild",
    as: "owner",
    request: (ctx) => ({ body: { chainId: 31337, amount: 5, tokenSymbol: "USDC", tokenAddress: ctx.b.usdc!.toLowerCase() } })
  },
  { op: "hiring.revokeMandate", as: "owner", request: (ctx) => ({ params: { mandateId: ctx.b.mandateId! } }) },
  // The launchpad (its upstream on loopback): public, no session.
  {
    op: "launchpad.listTokens",
    as: "none",
    request: () => ({ query: { chain: "base", sort: "volume24h", pageSize: "3" } }),
    learn: (body, ctx) => {
      ctx.b.launchpadToken = body.tokens[0].tokenAddress
    }
  },
  {
    op: "launchpad.tokenHistory",
    as: "none",
    request: (ctx) => ({ params: { chain: "base", address: ctx.b.launchpadToken! }, query: { range: "1W" } })
  },
  // The account's delegation to the Recovery contract, signed by the owner's key (guardians need it first).
  { op: "accounts.buildAccountDelegation", as: "owner", request: (ctx) => ({ body: { accountId: ctx.b.ownerAccountId! } }) },
  {
    op: "accounts.signAccountDelegation",
    as: "owner",
    fresh: true,
    request: async (ctx) => {
      const toSign = ctx.answers["accounts.buildAccountDelegation"]
      return { body: { delegationHash: toSign.delegationHash, signature: await signLeg(ctx.owner, toSign.typedData) } }
    }
  },
  { op: "accounts.buildRules", as: "owner", request: (ctx) => ({ body: { intentType: "account_freeze", accountId: ctx.b.ownerAccountId! } }) },
  { op: "delegations.revoke", as: "owner", request: (ctx) => ({ params: { delegationId: ctx.b.delegationId! } }) },
  // A guardian: the owner names a trusted contact's key (one guardian, threshold 1; the account's delegation to the
  // Recovery contract is signed above), relayed; that key signs in with its own session, sees the account it guards,
  // signs its approval of a new owner key and builds the approval (its own account's operation). Built, not relayed:
  // relaying it would start a recovery of the story's account.
  {
    op: "guardian.listGuardedAccounts",
    as: "guardian",
    before: async (ctx) => {
      const guardian = signerOf(ctx, "guardian")
      const install = await send(ctx, "post", "/account/rules/build", "owner", {
        body: {
          intentType: "guardian_add",
          accountId: ctx.b.ownerAccountId!,
          guardians: [{ address: guardian.address, label: "Carol (sister)" }],
          threshold: 1,
          delaySeconds: 172_800
        }
      })
      if (install.status >= 300) throw new Error(`guardian install: ${install.status} ${JSON.stringify(install.body)}`)
      await relay(ctx, "owner", install.body)
      const session = await signIn(ctx, guardian)
      ctx.tokens.guardian = session.token
      ctx.b.guardianAddress = session.signerAddress
      ctx.b.guardianAccount = session.accounts[0].address
    },
    request: () => ({}),
    learn: (body, ctx) => {
      if (body.length !== 1 || body[0].account !== ctx.b.ownerAccount!.toLowerCase()) throw new Error(`guarded: ${JSON.stringify(body)}`)
    }
  },
  {
    op: "guardian.buildRecoveryApproval",
    as: "guardian",
    request: (ctx) => ({ body: { account: ctx.b.ownerAccount!, chainId: 31337, newOwner: recoveredKey } })
  },
  {
    op: "guardian.buildGuardianRecovery",
    as: "guardian",
    fresh: true,
    request: async (ctx) => {
      const { typedData } = ctx.answers["guardian.buildRecoveryApproval"]
      const { EIP712Domain: _, ...types } = typedData.types
      const approvalSignature = await signerOf(ctx, "guardian").signTypedData!({
        domain: typedData.domain,
        types,
        primaryType: "RecoveryApproval",
        message: { ...typedData.message, nonce: BigInt(typedData.message.nonce) }
      })
      return { body: { account: ctx.b.ownerAccount!, chainId: 31337, action: "approve", newOwner: recoveredKey, approvalSignature } }
    }
  },
  // A panic key: the owner makes a trusted contact's key one (signed delegation, installed by an owner operation); that
  // key signs in with its own session, sees the account it can freeze, and freezes it (its own account's operation).
  {
    op: "panic.listPanicAccounts",
    as: "panic",
    before: async (ctx) => {
      const made = await send(ctx, "post", "/account/rules/delegations/build", "owner", {
        body: { accountId: ctx.b.ownerAccountId!, kind: "panic", panicKey: signerOf(ctx, "panic").address, label: "Bob (brother)" }
      })
      if (made.status >= 300) throw new Error(`panic delegation: ${made.status} ${JSON.stringify(made.body)}`)
      const toSign = made.body as any
      const signed = await send(ctx, "post", "/account/rules/delegations/sign", "owner", {
        body: { delegationHash: toSign.delegationHash, signature: await signLeg(ctx.owner, toSign.typedData) }
      })
      if (signed.status >= 300) throw new Error(`panic signature: ${signed.status} ${JSON.stringify(signed.body)}`)
      const install = await send(ctx, "post", "/account/rules/build", "owner", {
        body: { intentType: "panic_install", accountId: ctx.b.ownerAccountId!, delegationHash: toSign.delegationHash }
      })
      if (install.status >= 300) throw new Error(`panic install: ${install.status} ${JSON.stringify(install.body)}`)
      await relay(ctx, "owner", install.body)
      ctx.b.panicDelegationHash = toSign.delegationHash
      const session = await signIn(ctx, signerOf(ctx, "panic"))
      ctx.tokens.panic = session.token
      ctx.b.panicAddress = session.signerAddress
      ctx.b.panicAccount = session.accounts[0].address
    },
    request: () => ({})
  },
  {
    op: "panic.buildPanicFreeze",
    as: "panic",
    request: (ctx) => ({ body: { delegationHash: ctx.b.panicDelegationHash! } }),
    // Relayed: the account reads frozen (the panic key's account pays nothing: the freeze is sponsored).
    learn: async (body, ctx) => {
      await relay(ctx, "panic", body)
      const rules = await send(ctx, "get", "/account/rules", "owner", { query: { accountId: ctx.b.ownerAccountId! } })
      if ((rules.body as any)?.frozen !== true) throw new Error(`not frozen: ${JSON.stringify(rules.body)}`)
    }
  },
  { op: "session.signOut", as: "owner", request: () => ({}) }
]
