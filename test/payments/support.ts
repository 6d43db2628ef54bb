/**
 * Steps of the x402-through-the-service tests: an owner's grant to an agent's own key (EOA)
 * or to its smart account, made through the service, the agent's session, its paying fetch through the service, and
 * reads of what the service recorded (payments, reservations, the owner's log).
 */
import { assert } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect, Exit, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, createPublicClient, type Hex, http } from "viem"
import { Chains } from "../../src/chain/Chains.ts"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import type { GrantContext } from "../../src/payments/x402/Authorizer.ts"
import { payingFetch, serviceAuthorizer } from "@das/x402-erc7710"
import { signIn } from "../../src/client/signIn.ts"
import { newSession, type Session, session, signLeg, signOp } from "../delegations/helpers.ts"
import { mint, testNetwork } from "../support/TestChain.ts"
import { TestServer } from "../support/TestServer.ts"
import { scope } from "./x402/support.ts"
import { sendFromDevAccount } from "../../src/chain/DevAccount.ts"

export interface GrantLimits {
  readonly budget?: number
  readonly perAction?: number
  readonly maxActions?: number
  /** Redeemers besides the agent; default: the facilitator of the test. */
  readonly redeemers?: { readonly mode: "delegate" | "named" | "redelegation"; readonly addresses?: ReadonlyArray<Address> }
  readonly recipients?: ReadonlyArray<Address>
  /** ISO time; default: the service's default lifetime. */
  readonly expiresAt?: string
}

export interface AgentOptions {
  /** The grant's delegate: the agent's own key (default), or its smart account (account 0, deployed first: ERC-1271). */
  readonly delegate?: "key" | "account"
  /** How the owner's account gets its 10 USDC (default: the run's chain's mint). */
  readonly fund?: (owner: Address) => Effect.Effect<void>
}

/** Deploys the signer's account 0 on the chain the test serves (anyone may send its factory call). */
export const deployAccount = (owner: Address) =>
  Effect.gen(function*() {
    const net = yield* Network
    const chains = yield* Chains
    const stack = (yield* Effect.orDie(chains.get(net.chainId))).accounts
    const { address, factory, factoryData } = yield* Effect.orDie(stack.counterfactualAccount(owner, 0n))
    // The run's deployer (a dev account of the chain, and of a fork of it).
    const deployer = privateKeyToAccount(Redacted.value(testNetwork().deployerKey)).address
    yield* Effect.promise(async () => {
      await sendFromDevAccount(net.rpcUrl, { from: deployer, to: factory!, data: factoryData! })
      const client = createPublicClient({ transport: http(net.rpcUrl) })
      if ((await client.getCode({ address })) === undefined) throw new Error(`the account ${address} was not deployed`)
    })
    return address
  })

/**
 * An owner (10 USDC) and an agent (its own key) holding the owner's grant, made through the
 * service; the agent's session and its one-line paying fetch through the service.
 */
export const ownerAndAgent = (facilitator: Address, limits: GrantLimits = {}, options: AgentOptions = {}) =>
  Effect.gen(function*() {
    const net = yield* Network
    const { baseUrl } = yield* TestServer
    const owner = yield* newSession()
    if (options.fund !== undefined) {
      yield* options.fund(owner.account.address as Address)
    } else {
      // The deployer mints for every file running at once: a nonce race is retried.
      for (let attempt = 0; ; attempt++) {
        const minted = yield* Effect.exit(mint("usd", owner.account.address as Hex, 10))
        if (Exit.isSuccess(minted)) break
        if (attempt === 4) return yield* Effect.die(new Error("minting failed five times"))
        yield* Effect.sleep(Duration.millis(200))
      }
    }
    const agentKey = generatePrivateKey()
    const agent = privateKeyToAccount(agentKey)
    const agentSession = yield* session(agentKey)
    const delegate = options.delegate === "account" ? yield* deployAccount(agent.address) : agent.address
    const build = yield* owner.api.delegations.build({
      payload: {
        name: "x402 agent",
        kind: "agent",
        delegateeAddress: delegate,
        chainId: net.chainId,
        ...(limits.expiresAt === undefined ? {} : { expiresAt: limits.expiresAt }),
        budgets: [{ token: { symbol: "USDC" }, amount: limits.budget ?? 1 }],
        perActionMax: { token: { symbol: "USDC" }, amount: limits.perAction ?? 0.5 },
        maxActions: limits.maxActions ?? 10,
        redeemers: limits.redeemers ?? { mode: "named", addresses: [facilitator] },
        ...(limits.recipients === undefined ? {} : { recipientAllowlist: limits.recipients.map((address, i) => ({ name: `payee ${i}`, address, chainId: net.chainId })) })
      }
    })
    const leg = build.delegations[0]!
    const signature = yield* signLeg(owner.key, leg.typedData)
    const created = yield* owner.api.delegations.create({
      payload: {
        userOp: yield* signOp(owner.key, build.enableUserOp),
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature }]
      }
    })
    assert.strictEqual(created.status, "active")
    const token = (yield* signIn(baseUrl, agent)).token
    const authorizer = serviceAuthorizer({ baseUrl, token, delegationId: created.id, payer: owner.account.address as Address, agent })
    const pay = payingFetch({ scope, authorizer })
    // What the agent holds of its grant, to sign around the service (the attacker's path).
    const context: GrantContext = {
      chainId: net.chainId,
      environment: net.delegation,
      grant: { ...leg.delegation, signature } as unknown as Delegation,
      scope: { tokens: [net.tokens.usd.address], recipients: (limits.recipients ?? []).map((r) => r) }
    }
    return { owner, agent, agentKey, agentSession, delegate, grantId: created.id, pay, authorizer, context, baseUrl, token }
  })

export type Parties = Effect.Success<ReturnType<typeof ownerAndAgent>>

/** Rows the service holds for a grant: payments and reservations (nothing may appear on a decline or a 400). */
export const heldFor = (grantId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const payments = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM x402_payments WHERE delegation_id = ${grantId}`
    const reservations = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM delegation_reservations WHERE delegation_id = ${grantId}`
    return { payments: Number(payments[0]!.n), reservations: Number(reservations[0]!.n) }
  }).pipe(Effect.orDie)

/** The grant's reservations as stored. */
export const reservationsOf = (grantId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ id: string; status: string; units: string; tx_hash: string | null }>`
      SELECT id, status, units::text AS units, tx_hash FROM delegation_reservations WHERE delegation_id = ${grantId} ORDER BY created_at`
  }).pipe(Effect.orDie)

export type { Session }
