/**
 * Shared steps of the delegations tests over HTTP: sessions, signing (real keys),
 * relaying through POST /userops, an enabled delegation, and (for the forged and
 * hand-assembled operations the service would never build) a build stored through
 * the service's own OperationBuilder on the test's database.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { decodeErrorResult, decodeFunctionResult, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { DelegationManager } from "@metamask/delegation-abis"
import { toAccount } from "../../src/accounts/Accounts.ts"
import { OperationBuilder } from "../../src/builds/OperationBuilder.ts"
import { fromWire } from "../../src/builds/Wire.ts"
import type { Call } from "../../src/chain/Accounts4337.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { Chains } from "../../src/chain/Chains.ts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { disabledDelegationsCall } from "../../src/delegations/Caveats.ts"
import type { IntentType, UserOperation } from "../../src/domain/Operations.ts"
import { OperationBuilderLive } from "../../src/userops/Live.ts"
import { client, TestServer } from "../support/TestServer.ts"

export const session = (key: Hex) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const s = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* client(s.token)
    const [account] = yield* api.accounts.listAccounts()
    return { api, account: account!, key }
  })

export const newSession = () => session(generatePrivateKey())

export type Session = Effect.Success<ReturnType<typeof session>>
export type Api = Session["api"]

/** Signs with the account stack of the operation's own chain (the EIP-712 domain names it). */
export const signOp = (key: Hex, op: UserOperation) =>
  Effect.gen(function*() {
    const chains = yield* Chains
    const stack = (yield* Effect.orDie(chains.get(op.chainId))).accounts
    const { signature: _s, ...unsigned } = fromWire(op)
    const signature = yield* stack.signUserOperation(key, unsigned)
    return { ...op, signature }
  })

/**
 * Relays through POST /userops and waits for the outcome (`?wait=1s`: answered as soon as the
 * watcher settles it, else asked of the bundler again each second), for at most 2 minutes in
 * all: on a loaded machine inclusion took longer than the fixed number of short polls allowed.
 */
export const relay = (api: Api, op: UserOperation) =>
  Effect.gen(function*() {
    let receipt = yield* api.userops.submit({ payload: op })
    const deadline = Date.now() + 120_000
    while (receipt.status === "submitted" && Date.now() < deadline) {
      receipt = yield* api.userops.get({ params: { userOpId: receipt.userOpId }, query: { wait: "1s" } })
    }
    return receipt
  })

/** The typed error of a failing call, flattened (tag, declineReason, details). */
export const failure = <A, E extends { readonly _tag: string }, R>(e: Effect.Effect<A, E, R>) =>
  e.pipe(
    Effect.flip,
    Effect.map((err) => {
      const x = err as unknown as { _tag: string; message: string; declineReason?: string; details?: Record<string, unknown> }
      return { tag: x._tag, message: x.message, reason: x.declineReason, details: x.details ?? {} }
    })
  )

export const signLeg = (key: Hex, typedData: { readonly message: { readonly salt: string } }) =>
  Effect.promise(() =>
    privateKeyToAccount(key).signTypedData({
      ...typedData,
      message: { ...typedData.message, salt: BigInt(typedData.message.salt) }
    } as unknown as Parameters<ReturnType<typeof privateKeyToAccount>["signTypedData"]>[0])
  )

/** An enabled single-token (USDC) delegation of `owner` to `delegate`'s account. */
export const enabled = (
  owner: Session,
  delegate: Session,
  limits: { budget: number; perAction: number; maxActions: number; expiresAt?: string }
) =>
  Effect.gen(function*() {
    const net = yield* Network
    const build = yield* owner.api.delegations.build({
      payload: {
        name: "test",
        kind: "agent",
        delegateeAddress: delegate.account.address,
        chainId: net.chainId,
        budgets: [{ token: { symbol: "USDC" }, amount: limits.budget }],
        perActionMax: { token: { symbol: "USDC" }, amount: limits.perAction },
        maxActions: limits.maxActions,
        ...(limits.expiresAt === undefined ? {} : { expiresAt: limits.expiresAt })
      }
    })
    const leg = build.delegations[0]!
    const created = yield* owner.api.delegations.create({
      payload: {
        userOp: yield* signOp(owner.key, build.enableUserOp),
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature: yield* signLeg(owner.key, leg.typedData) }]
      }
    })
    assert.strictEqual(created.status, "active")
    return { created, leg }
  })

/** Whether the DelegationManager has `permissionId` disabled. */
export const disabledOnChain = (permissionId: string) =>
  Effect.gen(function*() {
    const net = yield* Network
    const chain = yield* Chain
    const data = yield* chain.call({ to: net.delegation.DelegationManager, data: disabledDelegationsCall(permissionId as Hex) })
    return decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data })
  })

export const usdcBalance = (address: string) =>
  Effect.gen(function*() {
    const net = yield* Network
    const chain = yield* Chain
    return yield* chain.erc20Balance(net.tokens.usd.address, address as Hex)
  })

/** The DelegationManager's error name in revert data found in `text` (a bundler message or receipt reason). */
export const dmErrorIn = (text: string | undefined): string | undefined => {
  for (const m of (text ?? "").matchAll(/0x[0-9a-fA-F]{8,}/g)) {
    try {
      return decodeErrorResult({ abi: DelegationManager, data: m[0] as Hex }).errorName
    } catch {
      // not a DelegationManager error
    }
  }
  // Already in words (receipts decode revert data: src/chain/RevertReasons.ts).
  const names = DelegationManager.filter((x) => x.type === "error").map((x) => (x as { name: string }).name)
  return names.find((name) => new RegExp(`\\b${name}\\b`).test(text ?? ""))
}

/**
 * Stores a build of `sessionOf`'s account made by the service's own OperationBuilder
 * (same database): for operations no endpoint would build (forged revokes, hand-made
 * calls). The relay then treats it like any build of that signer.
 */
export const storeBuild = (
  owner: Session,
  input: { intentType: IntentType; calls?: ReadonlyArray<Call>; callData?: Hex; riskReducing?: boolean }
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const builder = yield* OperationBuilder
    const rows = yield* sql<Parameters<typeof toAccount>[0]>`SELECT * FROM accounts WHERE id = ${owner.account.id}`
    const built = yield* builder.build({
      account: toAccount(rows[0]!),
      intentType: input.intentType,
      ...(input.calls === undefined ? {} : { calls: input.calls }),
      ...(input.callData === undefined ? {} : { callData: input.callData }),
      humanSummary: "hand-assembled by a test",
      riskReducing: input.riskReducing ?? false
    })
    return built.build
  }).pipe(Effect.provide(OperationBuilderLive))
