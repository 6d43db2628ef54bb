/**
 * DelegationRepo against the real PostgreSQL: rows written through it read back decoded
 * (jsonb columns as stored, timestamps as dates), and its updates move only what their
 * conditions allow (a pending delegation once, enabled legs once, reserved reservations).
 * The statements every action runs read one grant's rows through its index, never the table.
 */
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash, Hex } from "viem"
import { DelegationRepo, type Leg } from "../../src/delegations/DelegationRepo.ts"
import type { PolicySet } from "../../src/delegations/Domain.ts"
import { makeBudgetAlerts } from "../../src/notifications/BudgetAlerts.ts"
import { Notifications } from "../../src/notifications/Notifications.ts"
import { TokenRegistry } from "../../src/tokens/TokenRegistry.ts"
import { freshSigner, insertAccount } from "../audit/support.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"

const Live = DelegationRepo.layer.pipe(Layer.provideMerge(TestDatabaseLive()))

const token = "0x" + "11".repeat(20)
const policy: PolicySet = {
  budgets: [{ token: { symbol: "USDC", chainId: 31337, address: token }, amount: 100 }],
  perActionMax: { token: { symbol: "USDC", chainId: 31337, address: token }, amount: 25 },
  maxActions: 5,
  recipientAllowlist: [],
  allowedActions: [],
  expiresAt: "2099-01-01T00:00:00.000Z",
  freezeGated: true
}
const hex32 = () => `0x${crypto.randomUUID().replace(/-/g, "").repeat(2)}` as Hash
const legOf = (delegator: string, delegatee: string): Leg => ({
  permissionId: hex32(),
  token: { symbol: "USDC", address: token as Hex, decimals: 6 },
  delegation: {
    delegate: delegatee as Hex,
    delegator: delegator as Hex,
    authority: `0x${"ff".repeat(32)}`,
    caveats: [],
    salt: "0x01",
    signature: "0x"
  }
})

/** An account, a build and a pending delegation from it, all through the repo but the account. */
const pendingDelegation = Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const sql = yield* SqlClient.SqlClient
  const signer = freshSigner()
  const accountId = yield* insertAccount(signer)
  const [account] = yield* sql<{ address: string }>`SELECT address FROM accounts WHERE id = ${accountId}`.pipe(Effect.orDie)
  const delegatee = freshSigner()
  const leg = legOf(account!.address, delegatee)
  const buildId = `dbl_${crypto.randomUUID()}`
  const userOpHash = hex32()
  const expiresAt = new Date(Date.now() + 600_000)
  yield* repo.insertBuild({
    id: buildId,
    opBuildId: `bld_${crypto.randomUUID()}`,
    signerAddress: signer,
    accountId,
    name: "Groceries",
    kind: "agent",
    delegateeAddress: delegatee,
    chainId: 31337,
    policySet: policy,
    humanSummary: "Up to 100 USDC",
    legs: [leg],
    userOpHash,
    createdAt: new Date(),
    expiresAt
  })
  const id = `dlg_${crypto.randomUUID()}`
  const delegation = {
    id,
    buildId,
    signerAddress: signer,
    accountId,
    delegatorAddress: account!.address,
    permissionId: leg.permissionId,
    name: "Groceries",
    kind: "agent",
    icon: "agent",
    delegateeAddress: delegatee,
    chainId: 31337,
    policySet: policy,
    humanSummary: "Up to 100 USDC",
    legs: [leg],
    enableUserOpHash: userOpHash
  }
  const inserted = yield* repo.insertPending(delegation)
  return { signer, accountId, account: account!.address, delegatee, leg, buildId, userOpHash, expiresAt, id, delegation, inserted }
})

layer(Live, { excludeTestServices: true })("DelegationRepo", (it) => {
  it.effect("a build and a pending delegation read back decoded; a second insert of the same delegation is refused", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const d = yield* pendingDelegation
      assert.isTrue(d.inserted)
      assert.isFalse(yield* repo.insertPending(d.delegation))

      const build = yield* repo.findBuildByHash(d.userOpHash, d.signer)
      assert.strictEqual(build?.id, d.buildId)
      assert.deepStrictEqual(build?.policy_set, policy)
      assert.deepStrictEqual(build?.legs, [d.leg])
      assert.instanceOf(build?.expires_at, Date)
      assert.strictEqual(build?.expires_at.getTime(), d.expiresAt.getTime())
      assert.isUndefined(yield* repo.findBuildByHash(d.userOpHash, freshSigner()))

      const row = yield* repo.findById(d.id)
      assert.strictEqual(row?.status, "pending")
      assert.strictEqual(row?.frozen, false)
      assert.strictEqual(row?.chain_id, 31337)
      assert.isNull(row?.enable_tx_hash ?? null)
      assert.deepStrictEqual(row?.policy_set, policy)
      assert.deepStrictEqual(yield* repo.findByBuild(d.buildId), { id: d.id, status: "pending" })
      assert.strictEqual((yield* repo.findOwned(d.id, d.signer))?.id, d.id)
      assert.isUndefined(yield* repo.findOwned(d.id, freshSigner()))
    }))

  it.effect("activate moves a pending delegation once; failPending leaves an active one alone; the lists see it", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const d = yield* pendingDelegation
      const locked = yield* repo.lockByEnableHash(d.userOpHash).pipe(repo.withTransaction, Effect.orDie)
      assert.strictEqual(locked?.id, d.id)
      assert.deepStrictEqual(yield* repo.listOwned(d.accountId, d.signer), [])

      const txHash = hex32()
      yield* repo.activate(d.id, txHash)
      yield* repo.failPending(d.id, "too late")
      yield* repo.failPendingByEnableHash(d.userOpHash, "too late")
      const row = yield* repo.findById(d.id)
      assert.strictEqual(row?.status, "active")
      assert.strictEqual(row?.enable_tx_hash, txHash)
      assert.isNull(row?.failure_reason ?? null)
      assert.deepStrictEqual((yield* repo.listOwned(d.accountId, d.signer)).map((r) => r.id), [d.id])
      assert.deepStrictEqual((yield* repo.listHeld([d.delegatee], 31337)).map((r) => r.id), [d.id])
      // Over all of the signer's accounts in one statement: the granting account's rows, none from
      // an account with no grant, none for another signer (even naming this signer's account).
      const empty = yield* insertAccount(d.signer, 1)
      assert.deepStrictEqual((yield* repo.listOwnedIn([empty, d.accountId], d.signer)).map((r) => r.id), [d.id])
      assert.deepStrictEqual(yield* repo.listOwnedIn([], d.signer), [])
      assert.deepStrictEqual(yield* repo.listOwnedIn([d.accountId], freshSigner()), [])
      assert.deepStrictEqual((yield* repo.listOwnedBySigner(d.signer)).map((r) => r.id), [d.id])
      assert.deepStrictEqual(yield* repo.listOwnedBySigner(freshSigner()), [])

      yield* repo.insertSnapshot({
        id: `psn_${crypto.randomUUID()}`,
        delegationId: d.id,
        permissionId: d.leg.permissionId,
        policySet: policy,
        humanSummary: "Up to 100 USDC",
        enableTxHash: txHash
      })
      const snapshots = yield* repo.listSnapshots(d.id)
      assert.strictEqual(snapshots.length, 1)
      assert.deepStrictEqual(snapshots[0]?.policy_set, policy)
      assert.instanceOf(snapshots[0]?.captured_at, Date)
    }))

  it.effect("legs are disabled once; a delegation with every leg disabled is revoked and its reservations released", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const d = yield* pendingDelegation
      yield* repo.insertLeg({ permissionId: d.leg.permissionId, delegationId: d.id, delegatorAddress: d.account, tokenAddress: token })
      yield* repo.activate(d.id, hex32())
      assert.deepStrictEqual(yield* repo.enabledLegIds(d.accountId), [d.leg.permissionId])
      assert.deepStrictEqual(yield* repo.legsOfLiveDelegations(d.accountId), [[d.leg]])

      const rsv = `rsv_${crypto.randomUUID()}`
      yield* repo.insertReservation({
        id: rsv,
        delegationId: d.id,
        token,
        units: 5_000_000n,
        recipient: freshSigner(),
        expiresAt: new Date(Date.now() + 600_000)
      })
      const open = yield* repo.ledger(d.id, {}, undefined)
      assert.deepStrictEqual(open, [{ token_address: token, final_units: "0", open_units: "5000000", final_n: 0, open_n: 1 }])
      assert.deepStrictEqual(yield* repo.ledger(d.id, {}, rsv), [])

      const txHash = hex32()
      assert.deepStrictEqual(yield* repo.disableLegs([d.leg.permissionId], freshSigner(), txHash), [], "another delegator's legs")
      assert.deepStrictEqual(yield* repo.disableLegs([d.leg.permissionId], d.account, txHash), [d.id])
      assert.deepStrictEqual(yield* repo.disableLegs([d.leg.permissionId], d.account, txHash), [], "already disabled")
      assert.deepStrictEqual(yield* repo.enabledLegIds(d.accountId), [])
      const revoked = yield* repo.revokeFullyDisabled([d.id], txHash)
      assert.deepStrictEqual(revoked, [d.id])
      yield* repo.releaseForDelegations(revoked)
      assert.strictEqual((yield* repo.findById(d.id))?.status, "revoked")
      assert.strictEqual((yield* repo.lockReservation(rsv).pipe(repo.withTransaction, Effect.orDie))?.status, "released")
      assert.deepStrictEqual(yield* repo.legsOfLiveDelegations(d.accountId), [])
    }))

  it.effect("a reservation is submitted, then final once; the ledger counts it as final", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const d = yield* pendingDelegation
      yield* repo.activate(d.id, hex32())
      const rsv = `rsv_${crypto.randomUUID()}`
      yield* repo.insertReservation({
        id: rsv,
        delegationId: d.id,
        token,
        units: 7n,
        recipient: freshSigner(),
        expiresAt: new Date(Date.now() + 600_000)
      })
      yield* repo.submitReservation(rsv, hex32(), "op_1", false)
      const checked = yield* repo.lockReservation(rsv).pipe(repo.withTransaction, Effect.orDie)
      assert.deepStrictEqual(checked, { status: "submitted", units: "7", token_address: token, recipient: checked!.recipient, retakable: false })
      // The failure of another operation does not free it.
      yield* repo.releaseForFailedOperation(rsv, "op_2")
      assert.strictEqual((yield* repo.lockReservation(rsv))?.status, "submitted")
      yield* repo.finalizeReservation(rsv, hex32())
      yield* repo.releaseReservation(rsv)
      assert.strictEqual((yield* repo.lockReservation(rsv))?.status, "final")
      const ledger = yield* repo.ledger(d.id, {}, undefined)
      assert.deepStrictEqual(ledger, [{ token_address: token, final_units: "7", open_units: "0", final_n: 1, open_n: 0 }])
      // Final before the token's current period started: not counted as spent in it.
      const later = yield* repo.ledger(d.id, { [token]: new Date(Date.now() + 60_000).toISOString() }, undefined)
      assert.deepStrictEqual(later, [{ token_address: token, final_units: "0", open_units: "0", final_n: 1, open_n: 0 }])
    }))

  it.effect("the ledger and the budget alert's sum read one grant's rows through its index, not every grant's", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const sql = yield* SqlClient.SqlClient
      const d = yield* pendingDelegation
      yield* repo.activate(d.id, hex32())
      // Other grants' history: 20,000 rows (released, final, reserved, submitted) under 200 other
      // grants (their parent rows left out: the foreign key is off for this insert only).
      yield* sql`SET LOCAL session_replication_role = replica`.pipe(
        Effect.andThen(sql`
          INSERT INTO delegation_reservations (id, delegation_id, token_address, units, recipient, status, expires_at, created_at, settled_at)
          SELECT 'rsv_other_' || i || '_' || ${d.id}, 'dlg_other_' || (i % 200) || '_' || ${d.id}, ${token}, 1, '0x01',
                 (ARRAY['released', 'final', 'reserved', 'submitted'])[1 + i % 4], now() + interval '1 hour', now(), now()
          FROM generate_series(1, 20000) i`),
        sql.withTransaction
      )
      yield* sql`ANALYZE delegation_reservations`
      const rsv = `rsv_${crypto.randomUUID()}`
      yield* repo.insertReservation({ id: rsv, delegationId: d.id, token, units: 3n, recipient: freshSigner(), expiresAt: new Date(Date.now() + 600_000) })
      // The scans of delegation_reservations made by `body`: the connection's counts not yet
      // flushed to the shared statistics (which a transaction never does), before and after it.
      const counts = sql<{ seq_scan: string; idx_scan: string }>`
        SELECT seq_scan::text, idx_scan::text FROM pg_stat_xact_user_tables WHERE relname = 'delegation_reservations'`.pipe(
        Effect.map(([row]) => ({ seq: Number(row!.seq_scan), idx: Number(row!.idx_scan) }))
      )
      const scansOf = <A, E, R>(body: Effect.Effect<A, E, R>) =>
        Effect.gen(function*() {
          const before = yield* counts
          const result = yield* body
          const after = yield* counts
          return { result, seq: after.seq - before.seq, idx: after.idx - before.idx }
        }).pipe(sql.withTransaction, Effect.orDie)

      const ledger = yield* scansOf(repo.ledger(d.id, {}, undefined))
      assert.deepStrictEqual(ledger.result, [{ token_address: token, final_units: "0", open_units: "3", final_n: 0, open_n: 1 }])
      assert.deepStrictEqual({ seq: ledger.seq, idx: ledger.idx }, { seq: 0, idx: 1 })
      const locked = yield* scansOf(repo.lockWithLedger(d.id, {}, undefined))
      assert.deepStrictEqual(locked.result, { status: "active", frozen: false, ledger: ledger.result })
      assert.deepStrictEqual({ seq: locked.seq, idx: locked.idx }, { seq: 0, idx: 1 })

      yield* repo.submitReservation(rsv, hex32(), "op_1", false)
      yield* repo.finalizeReservation(rsv, hex32())
      const alerts = yield* makeBudgetAlerts.pipe(
        Effect.provide(Layer.merge(Notifications.layer, Layer.succeed(TokenRegistry, TokenRegistry.make([]))))
      )
      const alert = yield* scansOf(alerts.afterSpend(rsv))
      assert.strictEqual(alert.seq, 0, "the budget alert's sum read the whole table")
    }))

  it.effect("lockWithLedger locks the grant, then reads its ledger: a reservation committed while it waited for the lock is counted", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const d = yield* pendingDelegation
      yield* repo.activate(d.id, hex32())
      assert.isUndefined(yield* repo.lockWithLedger(`dlg_${crypto.randomUUID()}`, {}, undefined).pipe(repo.withTransaction, Effect.orDie))
      assert.deepStrictEqual(
        yield* repo.lockWithLedger(d.id, {}, undefined).pipe(repo.withTransaction, Effect.orDie),
        { status: "active", frozen: false, ledger: [] }
      )
      // Another request holds the grant's row lock, takes a reservation and commits after 300 ms.
      const locked = yield* Deferred.make<void>()
      const other = yield* Effect.forkChild(Effect.gen(function*() {
        yield* repo.lockById(d.id)
        yield* Deferred.succeed(locked, undefined)
        yield* Effect.sleep("300 millis")
        yield* repo.insertReservation({ id: `rsv_${crypto.randomUUID()}`, delegationId: d.id, token, units: 9n, recipient: freshSigner(), expiresAt: new Date(Date.now() + 600_000) })
      }).pipe(repo.withTransaction, Effect.orDie))
      yield* Deferred.await(locked)
      const seen = yield* repo.lockWithLedger(d.id, {}, undefined).pipe(repo.withTransaction, Effect.orDie)
      yield* Fiber.join(other)
      assert.deepStrictEqual(seen?.ledger, [{ token_address: token, final_units: "0", open_units: "9", final_n: 0, open_n: 1 }])
      // The reservation being re-evaluated (an open build answered again, an approval's) is left out, and only it.
      const mine = `rsv_${crypto.randomUUID()}`
      yield* repo.insertReservation({ id: mine, delegationId: d.id, token, units: 4n, recipient: freshSigner(), expiresAt: new Date(Date.now() + 600_000) })
      const without = yield* repo.lockWithLedger(d.id, {}, mine).pipe(repo.withTransaction, Effect.orDie)
      assert.deepStrictEqual(without?.ledger, [{ token_address: token, final_units: "0", open_units: "9", final_n: 0, open_n: 1 }])
      const withIt = yield* repo.lockWithLedger(d.id, {}, undefined).pipe(repo.withTransaction, Effect.orDie)
      assert.deepStrictEqual(withIt?.ledger, [{ token_address: token, final_units: "0", open_units: "13", final_n: 0, open_n: 2 }])
    }))

  // Issue 46 item 3: the lock, the ledger and the insert in one statement (`delegation_lock_reserve`).
  it.effect("lockAndReserve locks, reads the ledger before its insert (counting one committed while it waited), inserts; a rollback leaves nothing", () =>
    Effect.gen(function*() {
      const repo = yield* DelegationRepo
      const sql = yield* SqlClient.SqlClient
      const d = yield* pendingDelegation
      yield* repo.activate(d.id, hex32())
      const reservation = (units: bigint) => ({
        id: `rsv_${crypto.randomUUID()}`,
        delegationId: d.id,
        token,
        units,
        recipient: freshSigner(),
        expiresAt: new Date(Date.now() + 600_000),
        build: { userOpHash: hex32(), opBuildId: `bld_${crypto.randomUUID()}` }
      })
      const rowsOf = (id: string) =>
        sql<{ status: string; units: string; user_op_hash: string | null; op_build_id: string | null }>`
          SELECT status, units::text AS units, user_op_hash, op_build_id FROM delegation_reservations WHERE id = ${id}`.pipe(Effect.orDie)
      const unknown = reservation(1n)
      assert.isUndefined(yield* repo.lockAndReserve(`dlg_${crypto.randomUUID()}`, {}, unknown).pipe(repo.withTransaction, Effect.orDie))
      assert.deepStrictEqual(yield* rowsOf(unknown.id), [], "no grant: nothing inserted")
      // Another request holds the grant's row lock, takes a reservation and commits after 300 ms.
      const locked = yield* Deferred.make<void>()
      const other = yield* Effect.forkChild(Effect.gen(function*() {
        yield* repo.lockById(d.id)
        yield* Deferred.succeed(locked, undefined)
        yield* Effect.sleep("300 millis")
        yield* repo.insertReservation({ id: `rsv_${crypto.randomUUID()}`, delegationId: d.id, token, units: 9n, recipient: freshSigner(), expiresAt: new Date(Date.now() + 600_000) })
      }).pipe(repo.withTransaction, Effect.orDie))
      yield* Deferred.await(locked)
      const first = reservation(5n)
      const seen = yield* repo.lockAndReserve(d.id, {}, first).pipe(repo.withTransaction, Effect.orDie)
      yield* Fiber.join(other)
      assert.deepStrictEqual(seen, { status: "active", frozen: false, ledger: [{ token_address: token, final_units: "0", open_units: "9", final_n: 0, open_n: 1 }] })
      assert.deepStrictEqual(yield* rowsOf(first.id), [{ status: "reserved", units: "5", user_op_hash: first.build.userOpHash, op_build_id: first.build.opBuildId }])
      // Refused after the statement (the caller's evaluation fails its transaction): rolled back, nothing kept.
      const refused = reservation(7n)
      let seenBeforeRefusal: ReadonlyArray<unknown> | undefined
      const exit = yield* repo.lockAndReserve(d.id, {}, refused).pipe(
        Effect.flatMap((r) => {
          seenBeforeRefusal = r?.ledger
          return Effect.fail("refused" as const)
        }),
        repo.withTransaction,
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(seenBeforeRefusal, [{ token_address: token, final_units: "0", open_units: "14", final_n: 0, open_n: 2 }])
      assert.deepStrictEqual(yield* rowsOf(refused.id), [], "a refused reservation leaves no row")
      // A grant that is no longer active takes nothing (it is refused anyway).
      yield* sql`UPDATE delegations SET status = 'revoked' WHERE id = ${d.id}`.pipe(Effect.orDie)
      const late = reservation(1n)
      const onRevoked = yield* repo.lockAndReserve(d.id, {}, late).pipe(repo.withTransaction, Effect.orDie)
      assert.strictEqual(onRevoked?.status, "revoked")
      assert.deepStrictEqual(yield* rowsOf(late.id), [])
    }))
})

