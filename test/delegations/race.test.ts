/**
 * Spend accounting under real concurrency: 100 simultaneous action attempts on one
 * delegation, against the real database (reservations under the delegation's row lock),
 * never reserve more than the budget nor more actions than the count.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const session = (key: Hex) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const s = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* client(s.token)
    const [account] = yield* api.accounts.listAccounts()
    return { api, account: account!, key }
  })

/** An enabled delegation of a fresh owner to a fresh delegate. */
const enabled = (limits: { budget: number; perAction: number; maxActions: number }) =>
  Effect.gen(function*() {
    const net = yield* Network
    const stack = yield* AccountStack
    const owner = yield* session(generatePrivateKey())
    const delegate = yield* session(generatePrivateKey())
    const build = yield* owner.api.delegations.build({
      payload: {
        name: "race",
        kind: "dApp",
        delegateeAddress: delegate.account.address,
        chainId: net.chainId,
        budgets: [{ token: { symbol: "USDC" }, amount: limits.budget }],
        perActionMax: { token: { symbol: "USDC" }, amount: limits.perAction },
        maxActions: limits.maxActions
      }
    })
    const leg = build.delegations[0]!
    const delegationSignature = yield* Effect.promise(() =>
      privateKeyToAccount(owner.key).signTypedData({
        ...leg.typedData,
        message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) }
      } as unknown as Parameters<ReturnType<typeof privateKeyToAccount>["signTypedData"]>[0])
    )
    const { signature: _s, ...unsigned } = fromWire(build.enableUserOp)
    const signature = yield* stack.signUserOperation(owner.key, unsigned)
    const created = yield* owner.api.delegations.create({
      payload: {
        userOp: { ...build.enableUserOp, signature },
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature: delegationSignature }]
      }
    })
    return { owner, created }
  })

const attempt100 = (limits: { budget: number; perAction: number; maxActions: number }, amount: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { owner, created } = yield* enabled(limits)
    // Distinct requests (one recipient each): identical ones would share one build and reservation.
    const results = yield* Effect.forEach(
      Array.from({ length: 100 }, () => privateKeyToAccount(generatePrivateKey()).address),
      (recipient) =>
        owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount } }).pipe(
          Effect.map(() => "allowed"),
          Effect.catch((e) => Effect.succeed((e as { declineReason?: string }).declineReason ?? e._tag))
        ),
      { concurrency: "unbounded" }
    )
    const rows = yield* sql<{ units: string; n: number }>`
      SELECT coalesce(sum(units), 0)::text AS units, count(*)::int AS n FROM delegation_reservations
      WHERE delegation_id = ${created.id} AND status <> 'released'`
    return { results, reservedUnits: BigInt(rows[0]!.units), reservedCount: rows[0]!.n }
  })

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("budget race", (it) => {
  it.effect("100 concurrent attempts never exceed the budget", () =>
    Effect.gen(function*() {
      const { results, reservedUnits, reservedCount } = yield* attempt100({ budget: 50, perAction: 10, maxActions: 1000 }, 7)
      const allowed = results.filter((r) => r === "allowed").length
      assert.strictEqual(allowed, 7) // floor(50 / 7)
      assert.strictEqual(results.filter((r) => r === "cap_exceeded").length, 93)
      assert.strictEqual(reservedCount, 7)
      assert.isTrue(reservedUnits <= 50_000_000n)
      assert.strictEqual(reservedUnits, 49_000_000n)
    }))

  it.effect("100 concurrent attempts never exceed the action count", () =>
    Effect.gen(function*() {
      const { results, reservedCount } = yield* attempt100({ budget: 1000, perAction: 10, maxActions: 4 }, 1)
      assert.strictEqual(results.filter((r) => r === "allowed").length, 4)
      assert.strictEqual(results.filter((r) => r === "count_exhausted").length, 96)
      assert.strictEqual(reservedCount, 4)
    }))

  // The reservation is inserted in the grant's lock statement (`delegation_lock_reserve`) and kept
  // only when the policy, evaluated on the ledger that statement read, allows it (issue 46 item 3):
  // 50 actions at once against a budget of 10 take exactly 10, and a refused one leaves no row at all.
  it.effect("50 concurrent actions against a budget of 10: exactly 10 accepted, nothing left by the 40 refused", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { owner, created } = yield* enabled({ budget: 10, perAction: 1, maxActions: 1000 })
      const results = yield* Effect.forEach(
        Array.from({ length: 50 }, () => privateKeyToAccount(generatePrivateKey()).address),
        (recipient) =>
          owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 1 } }).pipe(
            Effect.map(() => "allowed"),
            Effect.catch((e) => Effect.succeed((e as { declineReason?: string }).declineReason ?? e._tag))
          ),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter((r) => r === "allowed").length, 10)
      assert.strictEqual(results.filter((r) => r === "cap_exceeded").length, 40)
      const rows = yield* sql<{ status: string; units: string; bound: boolean }>`
        SELECT status, units::text AS units, op_build_id IS NOT NULL AS bound FROM delegation_reservations
        WHERE delegation_id = ${created.id}`
      assert.strictEqual(rows.length, 10, "no reservation row of a refused action, not even a released one")
      for (const r of rows) {
        assert.strictEqual(r.status, "reserved")
        assert.strictEqual(r.units, "1000000")
        assert.isTrue(r.bound)
      }
    }))

  // The reservation is bound to its build, and the paymaster's sponsorship counted, in the build's
  // own transaction: every allowed action's reservation names the build it was answered with, and
  // the budget counts exactly the builds stored (none for the declined).
  it.effect("each allowed action's reservation and sponsorship commit with its build", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { owner, created } = yield* enabled({ budget: 50, perAction: 10, maxActions: 1000 })
      const budgetOps = sql<{ ops: number }>`SELECT coalesce(sum(ops), 0)::int AS ops FROM sponsor_totals WHERE scope = 'budget'`.pipe(
        Effect.map((rows) => rows[0]!.ops)
      )
      const before = yield* budgetOps
      const results = yield* Effect.forEach(
        Array.from({ length: 20 }, () => privateKeyToAccount(generatePrivateKey()).address),
        (recipient) => owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 7 } }).pipe(Effect.result),
        { concurrency: "unbounded" }
      )
      const built = results.flatMap((r) => (r._tag === "Success" ? [r.success] : []))
      assert.strictEqual(built.length, 7)
      const rows = yield* sql<{ build_id: string | null; user_op_hash: string | null; build_hash: string | null; sponsored: boolean | null }>`
        SELECT b.id AS build_id, r.user_op_hash, b.user_op_hash AS build_hash, b.sponsored
        FROM delegation_reservations r LEFT JOIN op_builds b ON b.id = r.op_build_id
        WHERE r.delegation_id = ${created.id} AND r.status <> 'released'`
      assert.strictEqual(rows.length, 7)
      assert.deepStrictEqual(new Set(rows.map((r) => r.build_id ?? undefined)), new Set(built.map((b) => b.buildId)))
      for (const r of rows) {
        assert.strictEqual(r.user_op_hash, r.build_hash)
        assert.isTrue(r.sponsored)
      }
      assert.strictEqual((yield* budgetOps) - before, 7, "one sponsorship per stored build")
    }))
})
