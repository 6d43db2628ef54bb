/**
 * Every statement of the owner feature (migration 0290), as named functions with decoded
 * rows; no rules. The chain holds the account's signers, guardians and settings; these
 * tables hold what it cannot (labels, the signed delegation to the Recovery contract).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

export const StoredDelegation = Schema.Struct({
  delegate: Schema.String,
  delegator: Schema.String,
  authority: Schema.String,
  caveats: Schema.Array(Schema.Struct({ enforcer: Schema.String, terms: Schema.String, args: Schema.String })),
  salt: Schema.String,
  signature: Schema.String
})
export type StoredDelegation = typeof StoredDelegation.Type

export const RecoveryDelegationRow = Schema.Struct({
  hash: Schema.String,
  account_id: Schema.String,
  chain_id: Schema.Number,
  delegation: StoredDelegation,
  signature: Schema.NullOr(Schema.String),
  installed_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type RecoveryDelegationRow = typeof RecoveryDelegationRow.Type

export const PanicKeyRow = Schema.Struct({
  hash: Schema.String,
  account_id: Schema.String,
  chain_id: Schema.Number,
  panic_key: Schema.String,
  delegate: Schema.String,
  label: Schema.String,
  delegation: StoredDelegation,
  signature: Schema.NullOr(Schema.String),
  installed_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type PanicKeyRow = typeof PanicKeyRow.Type

const LabelRow = Schema.Struct({ device: Schema.String, label: Schema.String })
const GuardianLabelRow = Schema.Struct({ guardian: Schema.String, label: Schema.String })

const decodeAll = <S extends Schema.Top>(schema: S) => <E, R>(effect: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
  effect.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(schema))), Effect.orDie)

export class OwnerRepo extends Context.Service<OwnerRepo, {
  upsertLabel(accountId: string, device: string, kind: "passkey" | "eoa", label: string): Effect.Effect<void>
  labelsOf(accountId: string): Effect.Effect<ReadonlyArray<typeof LabelRow.Type>>

  insertRecoveryDelegation(d: { hash: string; accountId: string; chainId: number; delegation: StoredDelegation }): Effect.Effect<void>
  findRecoveryDelegation(hash: string): Effect.Effect<RecoveryDelegationRow | undefined>
  /** The account's delegations to the Recovery contract, newest first. */
  recoveryDelegationsOf(accountId: string): Effect.Effect<ReadonlyArray<RecoveryDelegationRow>>
  setSignature(hash: string, signature: string): Effect.Effect<void>
  markInstalled(hash: string, txHash: string): Effect.Effect<void>

  insertPanicKey(p: { hash: string; accountId: string; chainId: number; panicKey: string; delegate: string; label: string; delegation: StoredDelegation }): Effect.Effect<void>
  findPanicKey(hash: string): Effect.Effect<PanicKeyRow | undefined>
  /** The account's panic keys, newest first. */
  panicKeysOf(accountId: string): Effect.Effect<ReadonlyArray<PanicKeyRow>>
  /** The signed, installed panic delegations held for `panicKey` (its own sign-in's view). */
  panicKeysHeldBy(panicKey: string): Effect.Effect<ReadonlyArray<PanicKeyRow>>
  setPanicSignature(hash: string, signature: string): Effect.Effect<void>
  markPanicInstalled(hash: string, txHash: string): Effect.Effect<void>
  /** Sets the account's frozen flag (the panic key's freeze executed). */
  setFrozen(accountId: string, frozen: boolean): Effect.Effect<void>

  /**
   * Hands the account to `newSigner` (its owner key changed on chain in `txHash`): the account
   * and its grants move to the new key's sign-in, at its next free index; the old key no longer
   * reaches them. Answers whether it moved now (false: already moved, or not held by `oldSigner`).
   */
  changeOwnerKey(c: { accountId: string; oldSigner: string; newSigner: string; txHash: string }): Effect.Effect<boolean>

  upsertGuardianLabels(accountId: string, guardians: ReadonlyArray<{ readonly address: string; readonly label: string }>): Effect.Effect<void>
  guardianLabels(accountId: string): Effect.Effect<ReadonlyArray<typeof GuardianLabelRow.Type>>
}>()("das/owner/OwnerRepo") {
  static readonly layer = Layer.effect(OwnerRepo, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const delegations = decodeAll(RecoveryDelegationRow)
    const panicRows = decodeAll(PanicKeyRow)
    const panicColumns = sql`hash, account_id, chain_id, panic_key, delegate, label, delegation, signature, installed_at, created_at`
    return OwnerRepo.of({
      insertPanicKey: (p) =>
        sql`INSERT INTO owner_panic_keys (hash, account_id, chain_id, panic_key, delegate, label, delegation)
            VALUES (${p.hash.toLowerCase()}, ${p.accountId}, ${p.chainId}, ${p.panicKey.toLowerCase()}, ${p.delegate.toLowerCase()},
                    ${p.label}, ${JSON.stringify(p.delegation)}::jsonb)
            ON CONFLICT (hash) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
      findPanicKey: (hash) =>
        panicRows(sql`SELECT ${panicColumns} FROM owner_panic_keys WHERE hash = ${hash.toLowerCase()}`).pipe(Effect.map((rows) => rows[0])),
      panicKeysOf: (accountId) =>
        panicRows(sql`SELECT ${panicColumns} FROM owner_panic_keys WHERE account_id = ${accountId} ORDER BY created_at DESC, hash`),
      panicKeysHeldBy: (panicKey) =>
        panicRows(sql`SELECT ${panicColumns} FROM owner_panic_keys
                      WHERE panic_key = ${panicKey.toLowerCase()} AND signature IS NOT NULL AND installed_at IS NOT NULL
                      ORDER BY installed_at DESC, hash`),
      setPanicSignature: (hash, signature) =>
        sql`UPDATE owner_panic_keys SET signature = ${signature}, signed_at = now() WHERE hash = ${hash.toLowerCase()}`.pipe(Effect.asVoid, Effect.orDie),
      markPanicInstalled: (hash, txHash) =>
        sql`UPDATE owner_panic_keys
            SET installed_at = COALESCE(installed_at, now()), install_tx_hash = COALESCE(install_tx_hash, ${txHash})
            WHERE hash = ${hash.toLowerCase()}`.pipe(Effect.asVoid, Effect.orDie),
      setFrozen: (accountId, frozen) =>
        sql`UPDATE accounts SET frozen = ${frozen} WHERE id = ${accountId}`.pipe(Effect.asVoid, Effect.orDie),

      changeOwnerKey: (c) =>
        sql.withTransaction(Effect.gen(function*() {
          const next = c.newSigner.toLowerCase()
          // The same lock as an account create of that signer: the index taken is the next free one.
          yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`accounts:${next}`}, 0))`
          const moved = yield* sql`
            UPDATE accounts SET signer_address = ${next},
              idx = (SELECT COALESCE(MAX(idx) + 1, 0) FROM accounts WHERE signer_address = ${next})
            WHERE id = ${c.accountId} AND signer_address = ${c.oldSigner.toLowerCase()}
            RETURNING id`
          if (moved.length === 0) return false
          yield* sql`UPDATE delegations SET signer_address = ${next} WHERE account_id = ${c.accountId}`
          yield* sql`INSERT INTO owner_key_changes (account_id, old_signer, new_signer, tx_hash)
                     VALUES (${c.accountId}, ${c.oldSigner.toLowerCase()}, ${next}, ${c.txHash.toLowerCase()})
                     ON CONFLICT DO NOTHING`
          return true
        })).pipe(Effect.orDie),

      upsertLabel: (accountId, device, kind, label) =>
        sql`INSERT INTO owner_device_labels (account_id, device, kind, label)
            VALUES (${accountId}, ${device.toLowerCase()}, ${kind}, ${label})
            ON CONFLICT (account_id, device) DO UPDATE SET label = EXCLUDED.label`.pipe(Effect.asVoid, Effect.orDie),
      labelsOf: (accountId) =>
        decodeAll(LabelRow)(sql`SELECT device, label FROM owner_device_labels WHERE account_id = ${accountId}`),

      insertRecoveryDelegation: (d) =>
        sql`INSERT INTO owner_recovery_delegations (hash, account_id, chain_id, delegation)
            VALUES (${d.hash.toLowerCase()}, ${d.accountId}, ${d.chainId}, ${JSON.stringify(d.delegation)}::jsonb)
            ON CONFLICT (hash) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
      findRecoveryDelegation: (hash) =>
        delegations(sql`SELECT hash, account_id, chain_id, delegation, signature, installed_at, created_at
                        FROM owner_recovery_delegations WHERE hash = ${hash.toLowerCase()}`).pipe(Effect.map((rows) => rows[0])),
      recoveryDelegationsOf: (accountId) =>
        delegations(sql`SELECT hash, account_id, chain_id, delegation, signature, installed_at, created_at
                        FROM owner_recovery_delegations WHERE account_id = ${accountId}
                        ORDER BY created_at DESC, hash`),
      setSignature: (hash, signature) =>
        sql`UPDATE owner_recovery_delegations SET signature = ${signature}, signed_at = now() WHERE hash = ${hash.toLowerCase()}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      markInstalled: (hash, txHash) =>
        sql`UPDATE owner_recovery_delegations
            SET installed_at = COALESCE(installed_at, now()), install_tx_hash = COALESCE(install_tx_hash, ${txHash})
            WHERE hash = ${hash.toLowerCase()}`.pipe(Effect.asVoid, Effect.orDie),

      upsertGuardianLabels: (accountId, guardians) =>
        Effect.forEach(guardians, (g) =>
          sql`INSERT INTO owner_guardian_labels (account_id, guardian, label) VALUES (${accountId}, ${g.address.toLowerCase()}, ${g.label})
              ON CONFLICT (account_id, guardian) DO UPDATE SET label = EXCLUDED.label`, { discard: true }).pipe(Effect.orDie),
      guardianLabels: (accountId) =>
        decodeAll(GuardianLabelRow)(sql`SELECT guardian, label FROM owner_guardian_labels WHERE account_id = ${accountId}`)
    })
  }))
}
