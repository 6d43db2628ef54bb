/**
 * Every SQL statement the delegations service runs (delegation_builds, delegations,
 * delegation_legs, policy_snapshots, delegation_reservations, and the few reads of
 * accounts, op_builds and user_operations it needs), as named functions with rows decoded
 * by Schema (the row types: DelegationRows.ts). No business rules here: what to run, and
 * when, is decided by the service (Enable.ts, Actions.ts, RevokeFreeze.ts, Reads.ts). A
 * database or decoding failure is a defect; transactions are the caller's (`withTransaction`). Queries run on the captured
 * `SqlClient`, so inside the relay's settlement transaction they join it (RelayHooks.ts).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { AccountRow, toAccount } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { PolicySet } from "./Domain.ts"
import {
  BuildRow,
  DelegationRow,
  LedgerOrPaymentRow,
  LedgerRow,
  type Leg,
  LegsJson,
  LockedLedgerRow,
  type NewBuild,
  type NewDelegation,
  type NewReservation,
  OpenActionRow,
  type OpenPayment,
  ReservationCheckRow,
  SnapshotRow
} from "./DelegationRows.ts"

export {
  BuildRow,
  type Carried,
  DelegationRow,
  LedgerRow,
  type Leg,
  type NewBuild,
  type NewDelegation,
  type NewReservation,
  OpenActionRow,
  ReservationCheckRow,
  SnapshotRow
} from "./DelegationRows.ts"

export class DelegationRepo extends Context.Service<DelegationRepo, {
  /** Runs `self` in a transaction (a savepoint inside an open one); one of its own is run again if it lost a lock conflict. */
  withTransaction<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R>

  // delegation_builds
  insertBuild(build: NewBuild): Effect.Effect<void>
  findBuildByHash(userOpHash: string, signerAddress: string): Effect.Effect<BuildRow | undefined>

  // delegations (each row with its account's `frozen`)
  findOwned(id: string, signerAddress: string): Effect.Effect<DelegationRow | undefined>
  /** A delegation held by one of the signer's accounts on the delegation's chain, or by the signer's own key (an EOA delegate). */
  findHeld(id: string, signerAddress: string): Effect.Effect<DelegationRow | undefined>
  /** The signer's own delegation or one it holds (`findOwned` or `findHeld`), in one statement. */
  findUsable(id: string, signerAddress: string): Effect.Effect<DelegationRow | undefined>
  findById(id: string): Effect.Effect<DelegationRow | undefined>
  /** The signer's active and revoked delegations from one of its accounts. */
  listOwned(accountId: string, signerAddress: string): Effect.Effect<ReadonlyArray<DelegationRow>>
  /**
   * `listOwned` over several accounts in one statement: a read over all of a signer's accounts
   * costs one round trip, not one per account (issue 46: 1,000 accounts were 1,000 statements).
   */
  listOwnedIn(accountIds: ReadonlyArray<string>, signerAddress: string): Effect.Effect<ReadonlyArray<DelegationRow>>
  /**
   * `listOwned` over every account of the signer, in one statement that never lists the accounts
   * themselves: its cost follows the grants, not the accounts that hold none.
   */
  listOwnedBySigner(signerAddress: string): Effect.Effect<ReadonlyArray<DelegationRow>>
  /** Active and revoked delegations on `chainId` whose delegatee is one of `delegateeAddresses` (any owner's). */
  listHeld(delegateeAddresses: ReadonlyArray<string>, chainId: number): Effect.Effect<ReadonlyArray<DelegationRow>>
  /**
   * Locks the delegation's row (`FOR NO KEY UPDATE`: its writers queue, a row referring to it
   * by foreign key does not; migration 0490); inside a transaction.
   */
  lockById(id: string): Effect.Effect<DelegationRow | undefined>
  /** Locks the delegation created by an enable operation (`frozen` read as false). */
  lockByEnableHash(userOpHash: string): Effect.Effect<DelegationRow | undefined>
  findByBuild(buildId: string): Effect.Effect<{ readonly id: string; readonly status: string } | undefined>
  /** Inserts a pending delegation; false when one conflicts (same build, permission or enable hash). */
  insertPending(delegation: NewDelegation): Effect.Effect<boolean>
  /** Names the delegation in its enable build's metadata (its audit entry then carries `delegationId`). */
  nameEnableBuild(chainId: number, userOpHash: string, delegationId: string): Effect.Effect<void>
  insertLeg(leg: {
    readonly permissionId: string
    readonly delegationId: string
    readonly delegatorAddress: string
    readonly tokenAddress: string
  }): Effect.Effect<void>
  /** A pending delegation to active, with its enable transaction. */
  activate(id: string, txHash: string): Effect.Effect<void>
  /** A pending delegation to failed. */
  failPending(id: string, reason: string): Effect.Effect<void>
  /** The pending delegation of an enable operation to failed. */
  failPendingByEnableHash(userOpHash: string, reason: string): Effect.Effect<void>
  /** Active delegations among `ids` with no leg left enabled to revoked; their ids. */
  revokeFullyDisabled(ids: ReadonlyArray<string>, txHash: string): Effect.Effect<ReadonlyArray<string>>

  // delegation_legs
  /** Marks the delegator's still-enabled legs among `permissionIds` disabled; the delegations they belong to. */
  disableLegs(permissionIds: ReadonlyArray<string>, delegatorAddress: string, txHash: string): Effect.Effect<ReadonlyArray<string>>
  /** The legs (as stored on the delegation) of the account's active and pending delegations. */
  legsOfLiveDelegations(accountId: string): Effect.Effect<ReadonlyArray<ReadonlyArray<Leg>>>
  /** Permission ids of the account's active and pending delegations' legs not yet disabled. */
  enabledLegIds(accountId: string): Effect.Effect<ReadonlyArray<string>>

  // policy_snapshots
  insertSnapshot(snapshot: {
    readonly id: string
    readonly delegationId: string
    readonly permissionId: string
    readonly policySet: PolicySet
    readonly humanSummary: string
    readonly enableTxHash: string
  }): Effect.Effect<void>
  listSnapshots(delegationId: string): Effect.Effect<ReadonlyArray<SnapshotRow>>

  // delegation_reservations
  insertReservation(reservation: NewReservation): Effect.Effect<void>
  /** Binds a reservation to the action build made for it. */
  bindReservation(id: string, userOpHash: string, opBuildId: string): Effect.Effect<void>
  /** Locks a reservation (`FOR UPDATE`) with whether it may be taken again. */
  lockReservation(id: string): Effect.Effect<ReservationCheckRow | undefined>
  /** Reservation to submitted, bound to the operation (`retaken`: also clears its settlement). */
  submitReservation(id: string, userOpHash: string, operationId: string, retaken: boolean): Effect.Effect<void>
  /** Releases a reserved or submitted reservation. */
  releaseReservation(id: string): Effect.Effect<void>
  /** Releases a reservation whatever its status (a decline at submit, under its lock). */
  releaseReservationNow(id: string): Effect.Effect<void>
  /** A reservation to final, with its transaction, whatever its status (its operation executed). */
  finalizeReservation(id: string, txHash: string): Effect.Effect<void>
  /** A reservation to final with the units that moved (an x402 `upto` payment settles at most what it reserved). */
  finalizeReservationUnits(id: string, units: bigint, txHash: string): Effect.Effect<void>
  /** A final reservation whose transaction left the chain: held again (`units` until `expiresAt`), as before it settled. */
  reholdReservation(id: string, units: bigint, expiresAt: Date): Effect.Effect<void>
  /** Releases the reservation if the failed operation is the one bound to it (or none is and it is still reserved). */
  releaseForFailedOperation(id: string, operationId: string): Effect.Effect<void>
  /** Releases reserved reservations of other builds at the same (chain, sender, nonce). */
  releaseSameNonce(op: { readonly chainId: number; readonly sender: string; readonly nonce: string; readonly exceptBuildId: string }): Effect.Effect<void>
  /** Releases the reserved reservations of the delegations `ids`. */
  releaseForDelegations(ids: ReadonlyArray<string>): Effect.Effect<void>
  /** Holds a reserved reservation until `until` (an action waiting for approvals). */
  holdReservation(id: string, until: Date): Effect.Effect<void>
  /** Releases a reservation only while it is `reserved` (an operation of it in flight is the relay's to settle). */
  releaseReserved(id: string): Effect.Effect<void>
  /** A reservation's status, and whether it is still held (a `reserved` one counts until it expires). */
  findReservation(id: string): Effect.Effect<{ readonly status: string; readonly held: boolean } | undefined>
  /**
   * Open units (reserved and unexpired, or submitted) of the grant's actions in `token` (to `recipient`,
   * when given) that no approval request holds, but `exceptId`: what may still move without approvals
   * (a per-period approval threshold, issue 44).
   */
  openUnapproved(delegationId: string, token: string, recipient: string | undefined, exceptId: string): Effect.Effect<bigint>
  /** Per token: final units since `since[token]` (ISO, absent: ever) and open units, and their counts; excluding `exceptId`. */
  ledger(delegationId: string, since: Readonly<Record<string, string>>, exceptId: string | undefined): Effect.Effect<ReadonlyArray<LedgerRow>>
  /**
   * `ledgerWithOpenPayments` of several grants in one statement (one snapshot, one round trip): each
   * grant's ledger rows and open x402 payments by its id (a list's cards, docs/performance.md).
   */
  ledgersWithOpenPayments(requests: ReadonlyArray<{ readonly id: string; readonly since: Readonly<Record<string, string>> }>): Effect.Effect<
    ReadonlyMap<string, { readonly ledger: ReadonlyArray<LedgerRow>; readonly payments: ReadonlyArray<OpenPayment> }>
  >
  /**
   * The ledger (as `ledger`, nothing excepted) and, read in the same statement (one snapshot), the
   * open reservations of x402 payments not recorded settled yet, each with its payment delegation's
   * hash (at most 50, newest first): a payment the chain already shows settled is in the enforcers'
   * spend while its reservation is still open (Usage.ts `spentToDate`).
   */
  ledgerWithOpenPayments(delegationId: string, since: Readonly<Record<string, string>>): Effect.Effect<{
    readonly ledger: ReadonlyArray<LedgerRow>
    readonly payments: ReadonlyArray<OpenPayment>
  }>
  /**
   * Locks the grant's row (`FOR NO KEY UPDATE`; inside a transaction) and reads its status, its account's
   * frozen flag and its ledger after the lock, in one round trip (migration 0430). Undefined: no such grant.
   */
  lockWithLedger(delegationId: string, since: Readonly<Record<string, string>>, exceptId: string | undefined): Effect.Effect<
    { readonly status: DelegationRow["status"]; readonly frozen: boolean; readonly ledger: ReadonlyArray<LedgerRow> } | undefined
  >
  /**
   * `lockWithLedger`, then `reservation` inserted in the same statement (`delegation_lock_reserve`,
   * migration 0650) when the grant is active and its account not frozen; the ledger is the one
   * before it. The caller evaluates on that ledger and rolls its transaction back on a refusal.
   */
  lockAndReserve(delegationId: string, since: Readonly<Record<string, string>>, reservation: NewReservation): Effect.Effect<
    { readonly status: DelegationRow["status"]; readonly frozen: boolean; readonly ledger: ReadonlyArray<LedgerRow> } | undefined
  >

  // op_builds, accounts, user_operations
  /** The newest open action build with `shareKey` of the account whose reservation is still reserved. */
  findOpenAction(shareKey: string, accountId: string): Effect.Effect<OpenActionRow | undefined>
  accountByAddress(address: string, chainId: number): Effect.Effect<Account | undefined>
  operationIdByHash(userOpHash: string, chainId: number): Effect.Effect<string | undefined>
  /** Where the relay is with an enable still pending: sent to the bundler yet, and its last error (for the 504's details). */
  relayStateByHash(userOpHash: string, chainId: number): Effect.Effect<{ readonly sent: boolean; readonly lastError: string | null } | undefined>
}>()("das/delegations/DelegationRepo") {
  static readonly layer = Layer.effect(DelegationRepo, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  /** Decodes the rows of `query`; a database or decoding failure is a defect. */
  const decodeAll = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
    const decode = Schema.decodeUnknownEffect(Schema.Array(schema))
    return <E>(query: Effect.Effect<ReadonlyArray<unknown>, E>): Effect.Effect<ReadonlyArray<S["Type"]>> =>
      query.pipe(Effect.flatMap((rows) => decode(rows)), Effect.orDie) as Effect.Effect<ReadonlyArray<S["Type"]>>
  }
  const first = <A>(rows: ReadonlyArray<A>): A | undefined => rows[0]
  const run = <A, E>(query: Effect.Effect<A, E>): Effect.Effect<void> => query.pipe(Effect.orDie, Effect.asVoid)

  const delegations = decodeAll(DelegationRow)
  const builds = decodeAll(BuildRow)
  const snapshotRows = decodeAll(SnapshotRow)
  const checkRows = decodeAll(ReservationCheckRow)
  const ledgerRows = decodeAll(LedgerRow)
  const ledgersOrPayments = decodeAll(Schema.Struct({ delegation_id: Schema.String, ...LedgerOrPaymentRow.fields }))
  const lockedLedgers = decodeAll(LockedLedgerRow)
  const ledgerOrPayments = decodeAll(LedgerOrPaymentRow)
  const openActions = decodeAll(OpenActionRow)
  const totals = decodeAll(Schema.Struct({ total: Schema.String }))
  const ids = decodeAll(Schema.Struct({ id: Schema.String }))
  const delegationIds = decodeAll(Schema.Struct({ delegation_id: Schema.String }))
  const permissionIds = decodeAll(Schema.Struct({ permission_id: Schema.String }))
  const legColumns = decodeAll(Schema.Struct({ legs: LegsJson }))
  const statuses = decodeAll(Schema.Struct({ id: Schema.String, status: Schema.String }))
  const accountRows = decodeAll(AccountRow)
  const reservationStates = decodeAll(Schema.Struct({ status: Schema.String, held: Schema.Boolean }))

  /** `delegation_lock_ledger`'s / `delegation_lock_reserve`'s rows: the grant's status and frozen flag, and its ledger (none: no such grant). */
  const lockedLedgerOf = (rows: ReadonlyArray<typeof LockedLedgerRow.Type>) => {
    const head = rows[0]
    if (head === undefined) return undefined
    const ledger = rows.flatMap((r) =>
      r.token_address === null ? [] : [{
        token_address: r.token_address,
        final_units: r.final_units!,
        open_units: r.open_units!,
        final_n: r.final_n!,
        open_n: r.open_n!
      }]
    )
    return { status: head.status, frozen: head.frozen, ledger }
  }

  const selectDelegations = (where: ReturnType<typeof sql.and>) =>
    delegations(sql`SELECT d.*, a.frozen FROM delegations d JOIN accounts a ON a.id = d.account_id WHERE ${where}`)

  return DelegationRepo.of({
    withTransaction: transactionRetryingConflicts(sql),

    insertBuild: (b) =>
      run(sql`
        INSERT INTO delegation_builds (id, op_build_id, signer_address, account_id, name, kind, delegatee_address, chain_id,
                                       policy_set, human_summary, legs, user_op_hash, created_at, expires_at, replaces, carried, mandate)
        VALUES (${b.id}, ${b.opBuildId}, ${b.signerAddress}, ${b.accountId}, ${b.name}, ${b.kind}, ${b.delegateeAddress},
                ${b.chainId}, ${JSON.stringify(b.policySet)}::jsonb, ${b.humanSummary}, ${JSON.stringify(b.legs)}::jsonb,
                ${b.userOpHash}, ${b.createdAt}, ${b.expiresAt}, ${b.replaces?.delegationId ?? null},
                ${b.replaces === undefined ? null : JSON.stringify(b.replaces.carried)}::jsonb,
                ${b.mandate === undefined ? null : JSON.stringify(b.mandate)}::jsonb)`),
    findBuildByHash: (userOpHash, signerAddress) =>
      builds(sql`SELECT * FROM delegation_builds WHERE user_op_hash = ${userOpHash} AND signer_address = ${signerAddress}`).pipe(
        Effect.map(first)
      ),

    findOwned: (id, signerAddress) =>
      selectDelegations(sql.and([sql`d.id = ${id}`, sql`d.signer_address = ${signerAddress}`])).pipe(Effect.map(first)),
    findHeld: (id, signerAddress) =>
      selectDelegations(sql.and([
        sql`d.id = ${id}`,
        // Held by one of the signer's accounts on the grant's own chain (the same address on another chain is
        // another account), or by the signer's own key (an EOA delegate).
        sql`(d.delegatee_address IN (SELECT address FROM accounts WHERE signer_address = ${signerAddress} AND chain_id = d.chain_id)
             OR d.delegatee_address = ${signerAddress})`
      ])).pipe(Effect.map(first)),
    findUsable: (id, signerAddress) =>
      selectDelegations(sql.and([
        sql`d.id = ${id}`,
        sql`(d.signer_address = ${signerAddress}
             OR d.delegatee_address IN (SELECT address FROM accounts WHERE signer_address = ${signerAddress} AND chain_id = d.chain_id)
             OR d.delegatee_address = ${signerAddress})`
      ])).pipe(Effect.map(first)),
    findById: (id) => selectDelegations(sql.and([sql`d.id = ${id}`])).pipe(Effect.map(first)),
    listOwned: (accountId, signerAddress) =>
      selectDelegations(sql.and([
        sql`d.account_id = ${accountId}`,
        sql`d.signer_address = ${signerAddress}`,
        sql`d.status IN ('active', 'revoked')`
      ])),
    listOwnedIn: (accountIds, signerAddress) =>
      accountIds.length === 0 ? Effect.succeed([]) : selectDelegations(sql.and([
        sql`d.account_id IN ${sql.in(accountIds)}`,
        sql`d.signer_address = ${signerAddress}`,
        sql`d.status IN ('active', 'revoked')`
      ])),
    listOwnedBySigner: (signerAddress) =>
      selectDelegations(sql.and([
        sql`a.signer_address = ${signerAddress}`,
        sql`d.signer_address = ${signerAddress}`,
        sql`d.status IN ('active', 'revoked')`
      ])),
    listHeld: (delegateeAddresses, chainId) =>
      selectDelegations(sql.and([
        sql`d.delegatee_address IN ${sql.in(delegateeAddresses)}`,
        sql`d.chain_id = ${chainId}`,
        sql`d.status IN ('active', 'revoked')`
      ])),
    lockById: (id) =>
      delegations(sql`
        SELECT d.*, a.frozen FROM delegations d JOIN accounts a ON a.id = d.account_id
        WHERE d.id = ${id} FOR NO KEY UPDATE OF d`).pipe(Effect.map(first)),
    lockByEnableHash: (userOpHash) =>
      delegations(sql`SELECT d.*, false AS frozen FROM delegations d WHERE d.enable_user_op_hash = ${userOpHash} FOR NO KEY UPDATE`).pipe(
        Effect.map(first)
      ),
    findByBuild: (buildId) => statuses(sql`SELECT id, status FROM delegations WHERE build_id = ${buildId}`).pipe(Effect.map(first)),
    insertPending: (d) =>
      ids(sql`
        INSERT INTO delegations (id, build_id, signer_address, account_id, delegator_address, permission_id, name, kind, icon,
                                 delegatee_address, chain_id, policy_set, human_summary, legs, status, enable_user_op_hash, created_at,
                                 replaces, carried, mandate)
        VALUES (${d.id}, ${d.buildId}, ${d.signerAddress}, ${d.accountId}, ${d.delegatorAddress},
                ${d.permissionId}, ${d.name}, ${d.kind}, ${d.icon}, ${d.delegateeAddress},
                ${d.chainId}, ${JSON.stringify(d.policySet)}::jsonb, ${d.humanSummary},
                ${JSON.stringify(d.legs)}::jsonb, 'pending', ${d.enableUserOpHash}, now(),
                ${d.replaces?.delegationId ?? null}, ${d.replaces === undefined ? null : JSON.stringify(d.replaces.carried)}::jsonb,
                ${d.mandate === undefined ? null : JSON.stringify(d.mandate)}::jsonb)
        ON CONFLICT DO NOTHING
        RETURNING id`).pipe(Effect.map((rows) => rows.length > 0)),
    nameEnableBuild: (chainId, userOpHash, delegationId) =>
      run(sql`UPDATE op_builds SET metadata = metadata || ${JSON.stringify({ delegationId })}::jsonb
              WHERE chain_id = ${chainId} AND user_op_hash = ${userOpHash} AND intent_type = 'delegation_enable'`),
    insertLeg: (l) =>
      run(sql`INSERT INTO delegation_legs (permission_id, delegation_id, delegator_address, token_address)
              VALUES (${l.permissionId}, ${l.delegationId}, ${l.delegatorAddress}, ${l.tokenAddress})`),
    activate: (id, txHash) =>
      run(sql`UPDATE delegations SET status = 'active', enable_tx_hash = ${txHash}, activated_at = now()
              WHERE id = ${id} AND status = 'pending'`),
    failPending: (id, reason) =>
      run(sql`UPDATE delegations SET status = 'failed', failure_reason = ${reason} WHERE id = ${id} AND status = 'pending'`),
    failPendingByEnableHash: (userOpHash, reason) =>
      run(sql`UPDATE delegations SET status = 'failed', failure_reason = ${reason}
              WHERE enable_user_op_hash = ${userOpHash} AND status = 'pending'`),
    revokeFullyDisabled: (touched, txHash) =>
      ids(sql`
        UPDATE delegations d SET status = 'revoked', revoked_at = now(), revoke_tx_hash = ${txHash}
        WHERE d.id IN ${sql.in(touched)} AND d.status = 'active'
          AND NOT EXISTS (SELECT 1 FROM delegation_legs l WHERE l.delegation_id = d.id AND l.disabled_at IS NULL)
        RETURNING d.id`).pipe(Effect.map((rows) => rows.map((r) => r.id))),

    disableLegs: (permissionIdList, delegatorAddress, txHash) =>
      delegationIds(sql`
        UPDATE delegation_legs SET disabled_at = now(), disable_tx_hash = ${txHash}
        WHERE permission_id IN ${sql.in(permissionIdList)} AND delegator_address = ${delegatorAddress} AND disabled_at IS NULL
        RETURNING delegation_id`).pipe(Effect.map((rows) => rows.map((r) => r.delegation_id))),
    legsOfLiveDelegations: (accountId) =>
      legColumns(sql`
        SELECT d.legs FROM delegations d WHERE d.account_id = ${accountId} AND d.status IN ('active', 'pending')`).pipe(
        Effect.map((rows) => rows.map((r) => r.legs))
      ),
    enabledLegIds: (accountId) =>
      permissionIds(sql`
        SELECT l.permission_id FROM delegation_legs l JOIN delegations d ON d.id = l.delegation_id
        WHERE d.account_id = ${accountId} AND d.status IN ('active', 'pending') AND l.disabled_at IS NULL`).pipe(
        Effect.map((rows) => rows.map((r) => r.permission_id))
      ),

    insertSnapshot: (s) =>
      run(sql`
        INSERT INTO policy_snapshots (id, delegation_id, permission_id, policy_set, human_summary, captured_at, enable_tx_hash)
        VALUES (${s.id}, ${s.delegationId}, ${s.permissionId}, ${JSON.stringify(s.policySet)}::jsonb,
                ${s.humanSummary}, now(), ${s.enableTxHash})`),
    listSnapshots: (delegationId) =>
      snapshotRows(sql`SELECT * FROM policy_snapshots WHERE delegation_id = ${delegationId} ORDER BY captured_at, id`),

    insertReservation: (r) =>
      run(sql`
        INSERT INTO delegation_reservations (id, delegation_id, token_address, units, recipient, status, expires_at, created_at,
                                             user_op_hash, op_build_id)
        VALUES (${r.id}, ${r.delegationId}, ${r.token}, ${r.units.toString()}, ${r.recipient},
                'reserved', ${r.expiresAt}, now(), ${r.build?.userOpHash ?? null}, ${r.build?.opBuildId ?? null})`),
    bindReservation: (id, userOpHash, opBuildId) =>
      run(sql`UPDATE delegation_reservations SET user_op_hash = ${userOpHash}, op_build_id = ${opBuildId}
              WHERE id = ${id}`),
    lockReservation: (id) =>
      checkRows(sql`
        SELECT r.status, r.units::text AS units, r.token_address, r.recipient,
               (r.status = 'released' AND r.expires_at > now() AND EXISTS (
                 SELECT 1 FROM user_operations u WHERE u.id = r.operation_id AND u.outcome = 'rejected'
                   AND u.decline_reason IS NULL)) AS retakable
        FROM delegation_reservations r WHERE r.id = ${id} FOR UPDATE OF r`).pipe(Effect.map(first)),
    submitReservation: (id, userOpHash, operationId, retaken) =>
      retaken
        ? run(sql`UPDATE delegation_reservations SET status = 'submitted', settled_at = NULL,
                  user_op_hash = ${userOpHash}, operation_id = ${operationId} WHERE id = ${id}`)
        : run(sql`UPDATE delegation_reservations SET status = 'submitted', user_op_hash = ${userOpHash},
                  operation_id = ${operationId} WHERE id = ${id}`),
    releaseReservation: (id) =>
      run(sql`UPDATE delegation_reservations SET status = 'released', settled_at = now()
              WHERE id = ${id} AND status IN ('reserved', 'submitted')`),
    releaseReservationNow: (id) =>
      run(sql`UPDATE delegation_reservations SET status = 'released', settled_at = now() WHERE id = ${id}`),
    // Whatever its status: the chain shows its operation executed (a refusal or decline that
    // released it is corrected by the chain), so it is spent.
    finalizeReservation: (id, txHash) =>
      run(sql`
        UPDATE delegation_reservations SET status = 'final', settled_at = now(), tx_hash = ${txHash}
        WHERE id = ${id} AND status <> 'final'`),
    finalizeReservationUnits: (id, units, txHash) =>
      run(sql`
        UPDATE delegation_reservations SET status = 'final', units = ${units.toString()}, settled_at = now(), tx_hash = ${txHash}
        WHERE id = ${id} AND status <> 'final'`),
    reholdReservation: (id, units, expiresAt) =>
      run(sql`
        UPDATE delegation_reservations SET status = 'reserved', units = ${units.toString()}, expires_at = ${expiresAt},
          settled_at = NULL, tx_hash = NULL
        WHERE id = ${id}`),
    releaseForFailedOperation: (id, operationId) =>
      run(sql`
        UPDATE delegation_reservations SET status = 'released', settled_at = now()
        WHERE id = ${id} AND status IN ('reserved', 'submitted')
          AND (operation_id = ${operationId} OR (operation_id IS NULL AND status = 'reserved'))`),
    releaseSameNonce: (op) =>
      run(sql`
        UPDATE delegation_reservations r SET status = 'released', settled_at = now()
        FROM op_builds b
        WHERE b.id = r.op_build_id AND r.status = 'reserved' AND b.chain_id = ${op.chainId}
          AND b.sender = ${op.sender} AND b.nonce = ${op.nonce}
          AND b.id <> ${op.exceptBuildId}`),
    releaseForDelegations: (delegationIdList) =>
      run(sql`UPDATE delegation_reservations SET status = 'released', settled_at = now()
              WHERE delegation_id IN ${sql.in(delegationIdList)} AND status = 'reserved'`),
    holdReservation: (id, until) =>
      run(sql`UPDATE delegation_reservations SET expires_at = ${until} WHERE id = ${id} AND status = 'reserved'`),
    releaseReserved: (id) =>
      run(sql`UPDATE delegation_reservations SET status = 'released', settled_at = now() WHERE id = ${id} AND status = 'reserved'`),
    findReservation: (id) =>
      reservationStates(sql`
        SELECT status, (status = 'submitted' OR (status = 'reserved' AND expires_at > now())) AS held
        FROM delegation_reservations WHERE id = ${id}`).pipe(Effect.map(first)),
    openUnapproved: (delegationId, token, recipient, exceptId) =>
      totals(sql`
        SELECT coalesce(sum(r.units), 0)::text AS total FROM delegation_reservations r
        WHERE r.delegation_id = ${delegationId} AND lower(r.token_address) = ${token.toLowerCase()} AND r.id <> ${exceptId}
          AND (${recipient === undefined} OR lower(r.recipient) = ${(recipient ?? "").toLowerCase()})
          AND (r.status = 'submitted' OR (r.status = 'reserved' AND r.expires_at > now()))
          AND NOT EXISTS (SELECT 1 FROM approval_requests a WHERE a.reservation_id = r.id)`).pipe(
        Effect.map((rows) => BigInt(rows[0]?.total ?? "0"))
      ),
    ledger: (delegationId, since, exceptId) =>
      ledgerRows(sql`SELECT * FROM delegation_ledger(${delegationId}, ${JSON.stringify(since)}::jsonb, ${exceptId ?? null})`),
    ledgersWithOpenPayments: (requests) =>
      requests.length === 0
        ? Effect.succeed(new Map())
        : ledgersOrPayments(sql`
            WITH x AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(requests)}::jsonb) AS x(id text, since jsonb))
            SELECT x.id AS delegation_id, 'ledger' AS kind, l.token_address, l.final_units, l.open_units, l.final_n, l.open_n,
                   NULL::text AS payment_hash, NULL::text AS units
            FROM x CROSS JOIN LATERAL delegation_ledger(x.id, x.since, NULL) l
            UNION ALL
            SELECT x.id, 'payment', o.token_address, NULL, NULL, NULL, NULL, o.payment_hash, o.units
            FROM x CROSS JOIN LATERAL (
              SELECT r.token_address, p.payment_hash, r.units::text AS units
              FROM x402_payments p JOIN delegation_reservations r ON r.id = p.reservation_id
              WHERE p.delegation_id = x.id AND p.status = 'authorized'
                AND (r.status = 'submitted' OR (r.status = 'reserved' AND r.expires_at > now()))
              ORDER BY p.created_at DESC LIMIT 50) AS o`).pipe(Effect.map((rows) => {
            const byId = new Map<string, { ledger: Array<LedgerRow>; payments: Array<OpenPayment> }>()
            for (const r of rows) {
              const entry = byId.get(r.delegation_id) ?? { ledger: [], payments: [] }
              byId.set(r.delegation_id, entry)
              if (r.kind === "ledger") {
                entry.ledger.push({ token_address: r.token_address, final_units: r.final_units!, open_units: r.open_units!, final_n: r.final_n!, open_n: r.open_n! })
              } else entry.payments.push({ paymentHash: r.payment_hash!, token: r.token_address, units: BigInt(r.units!) })
            }
            return byId
          })),
    ledgerWithOpenPayments: (delegationId, since) =>
      ledgerOrPayments(sql`
        SELECT 'ledger' AS kind, l.token_address, l.final_units, l.open_units, l.final_n, l.open_n,
               NULL::text AS payment_hash, NULL::text AS units
        FROM delegation_ledger(${delegationId}, ${JSON.stringify(since)}::jsonb, NULL) AS l
        UNION ALL
        SELECT 'payment', o.token_address, NULL, NULL, NULL, NULL, o.payment_hash, o.units FROM (
          SELECT r.token_address, p.payment_hash, r.units::text AS units
          FROM x402_payments p JOIN delegation_reservations r ON r.id = p.reservation_id
          WHERE p.delegation_id = ${delegationId} AND p.status = 'authorized'
            AND (r.status = 'submitted' OR (r.status = 'reserved' AND r.expires_at > now()))
          ORDER BY p.created_at DESC LIMIT 50) AS o`).pipe(
        Effect.map((rows) => ({
          ledger: rows.flatMap((r) =>
            r.kind === "ledger"
              ? [{ token_address: r.token_address, final_units: r.final_units!, open_units: r.open_units!, final_n: r.final_n!, open_n: r.open_n! }]
              : []
          ),
          payments: rows.flatMap((r) =>
            r.kind === "payment" ? [{ paymentHash: r.payment_hash!, token: r.token_address, units: BigInt(r.units!) }] : []
          )
        }))
      ),
    lockWithLedger: (delegationId, since, exceptId) =>
      lockedLedgers(sql`SELECT * FROM delegation_lock_ledger(${delegationId}, ${JSON.stringify(since)}::jsonb, ${exceptId ?? null})`).pipe(
        Effect.map(lockedLedgerOf)
      ),
    lockAndReserve: (delegationId, since, r) =>
      lockedLedgers(sql`SELECT * FROM delegation_lock_reserve(${delegationId}, ${JSON.stringify(since)}::jsonb, ${
        JSON.stringify({
          id: r.id,
          token: r.token,
          units: r.units.toString(),
          recipient: r.recipient,
          expiresAt: r.expiresAt.toISOString(),
          userOpHash: r.build?.userOpHash ?? null,
          opBuildId: r.build?.opBuildId ?? null
        })
      }::jsonb)`).pipe(Effect.map(lockedLedgerOf)),

    findOpenAction: (shareKey, accountId) =>
      openActions(sql`
        SELECT b.answer, r.id AS reservation_id FROM op_builds b JOIN delegation_reservations r ON r.id = b.metadata->>'reservationId'
        WHERE b.share_key = ${shareKey} AND b.answer IS NOT NULL AND b.account_id = ${accountId}
          AND b.expires_at > now() + interval '1 minute' AND r.status = 'reserved'
        ORDER BY b.created_at DESC LIMIT 1`).pipe(Effect.map(first)),
    accountByAddress: (address, chainId) =>
      accountRows(sql`SELECT * FROM accounts WHERE address = ${address} AND chain_id = ${chainId}`).pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toAccount(rows[0]))
      ),
    operationIdByHash: (userOpHash, chainId) =>
      ids(sql`SELECT id FROM user_operations WHERE user_op_hash = ${userOpHash} AND chain_id = ${chainId}`).pipe(
        Effect.map((rows) => rows[0]?.id)
      ),
    relayStateByHash: (userOpHash, chainId) =>
      sql<{ sent: boolean; last_error: string | null }>`
        SELECT sent_at IS NOT NULL AS sent, last_error FROM user_operations
        WHERE user_op_hash = ${userOpHash} AND chain_id = ${chainId}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : { sent: rows[0].sent, lastError: rows[0].last_error }),
        Effect.orDie
      )
  })
})
