/**
 * The freeze race (issue 11): an enable mined but not yet settled by the service (the
 * bundler's receipts held back) when the owner builds a freeze. The freeze must disable
 * that delegation on chain too; the unfreeze and a revoke while frozen must not revert
 * (`AlreadyEnabled`), so the account is never stuck frozen.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Address } from "viem"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { bundlerProxy } from "../userops/bundlerProxy.ts"
import { disabledOnChain, newSession, relay, signLeg, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const statusOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ status: string }>`SELECT status FROM delegations WHERE id = ${id}`.pipe(Effect.map((rows) => rows[0]?.status)))

/** Enables a delegation whose operation is mined while the service has not settled it (`pending`). */
const raceSetup = Effect.fn("raceSetup")(function*(proxy: { setMode(mode: "up" | "receipt-null"): void }) {
  const net = yield* Network
  const chain = yield* Chain
  const owner = yield* newSession()
  const delegate = yield* newSession()
  // The owner's account exists on chain first (a freeze/unfreeze round trip), so the enable is its next nonce.
  const build = yield* owner.api.delegations.build({
    payload: {
      name: "race",
      kind: "agent",
      delegateeAddress: delegate.account.address,
      chainId: net.chainId,
      budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
      perActionMax: { token: { symbol: "USDC" }, amount: 5 },
      maxActions: 3
    }
  })
  const leg = build.delegations[0]!
  proxy.setMode("receipt-null")
  const sql = yield* SqlClient.SqlClient
  // Relayed, not settled: the service answers 504 "not executed yet" after its wait.
  const answered = yield* owner.api.delegations.create({
    payload: {
      userOp: yield* signOp(owner.key, build.enableUserOp),
      userOpHash: build.userOpHash,
      intentType: "delegation_enable",
      delegationSignatures: [{ permissionId: leg.permissionId, signature: yield* signLeg(owner.key, leg.typedData) }]
    }
  }).pipe(Effect.flip)
  assert.strictEqual(answered._tag, "UpstreamTimeout")
  const ids = yield* sql<{ id: string }>`SELECT id FROM delegations WHERE enable_user_op_hash = ${build.userOpHash}`
  const created = { id: ids[0]!.id }
  // Mined on chain (the account's nonce moved), not settled by the service.
  const sender = owner.account.address as Address
  // Until the bundler has mined it (within 2 minutes: a loaded machine's bundler, not a count of polls).
  const minedBy = Date.now() + 120_000
  while (Date.now() < minedBy && (yield* chain.entryPointNonce(sender, 0n).pipe(Effect.orDie)) === 0n) {
    yield* Effect.sleep(Duration.millis(100))
  }
  assert.strictEqual(yield* chain.entryPointNonce(sender, 0n).pipe(Effect.orDie), 1n)
  assert.strictEqual(yield* statusOf(created.id), "pending")
  assert.isFalse(yield* disabledOnChain(leg.permissionId))
  const ops = yield* sql<{ id: string }>`SELECT id FROM user_operations WHERE user_op_hash = ${build.userOpHash}`
  // Settles the enable (a poll of its operation, as the owner's wallet would do).
  const settleEnable = owner.api.userops.get({ params: { userOpId: ops[0]!.id }, query: {} })
  return { owner, created, leg, settleEnable }
})

describe("freeze race", () => {
  it.live("a freeze built while an enable is mined but unsettled disables it; unfreeze and a revoke while frozen do not revert", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const context = yield* Layer.build(TestServerLive({
        // The window between an enable's block and the first settlement (the follower's next
        // pass, a poll) is held open: no reconciler, no follower.
        config: { RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds", DELEGATION_ENABLE_WAIT: "1 second", FOLLOWER_INTERVAL: "0 seconds" },
        chain: { bundlerUrl: proxy.url }
      }))
      yield* Effect.gen(function*() {
        // 1. Freeze, then unfreeze: the delegation raced into the freeze comes back with the unfreeze.
        const a = yield* raceSetup(proxy)
        const freeze = yield* a.owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        proxy.setMode("up")
        assert.strictEqual((yield* relay(a.owner.api, yield* signOp(a.owner.key, freeze.userOp))).outcome, "mined")
        assert.isTrue(yield* disabledOnChain(a.leg.permissionId), "the freeze disabled the delegation whose enable was unsettled")
        assert.strictEqual((yield* a.settleEnable).outcome, "mined")
        assert.strictEqual(yield* statusOf(a.created.id), "active")
        const unfreeze = yield* a.owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
        const unfrozen = yield* relay(a.owner.api, yield* signOp(a.owner.key, unfreeze.userOp))
        assert.deepStrictEqual([unfrozen.status, unfrozen.outcome], ["included", "mined"], unfrozen.reason)
        assert.isFalse((yield* a.owner.api.accounts.getRules({ query: {} })).frozen)
        assert.isFalse(yield* disabledOnChain(a.leg.permissionId))

        // 2. Freeze, revoke while frozen, unfreeze: the revoked delegation stays disabled.
        const b = yield* raceSetup(proxy)
        const freezeB = yield* b.owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        proxy.setMode("up")
        assert.strictEqual((yield* relay(b.owner.api, yield* signOp(b.owner.key, freezeB.userOp))).outcome, "mined")
        assert.strictEqual((yield* b.settleEnable).outcome, "mined")
        assert.isTrue((yield* b.owner.api.accounts.getRules({ query: {} })).frozen)
        const revoke = yield* b.owner.api.delegations.revoke({ params: { delegationId: b.created.id } })
        const revoked = yield* relay(b.owner.api, yield* signOp(b.owner.key, revoke.userOp))
        assert.deepStrictEqual([revoked.status, revoked.outcome], ["included", "mined"], revoked.reason)
        assert.strictEqual(yield* statusOf(b.created.id), "revoked")
        const unfreezeB = yield* b.owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
        const unfrozenB = yield* relay(b.owner.api, yield* signOp(b.owner.key, unfreezeB.userOp))
        assert.deepStrictEqual([unfrozenB.status, unfrozenB.outcome], ["included", "mined"], unfrozenB.reason)
        assert.isTrue(yield* disabledOnChain(b.leg.permissionId), "a revoked delegation stays disabled after the unfreeze")
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped), { timeout: 120_000 })
})
